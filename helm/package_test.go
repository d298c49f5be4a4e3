package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPackageReproducible: a chart folder packaged at two times (its files
// touched in between) gives the same archive, every entry stamped
// PackageTime, and Helm loads it back with the same files.
func TestPackageReproducible(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workloads")
	if err := os.CopyFS(dir, os.DirFS("testdata/charts/workloads")); err != nil {
		t.Fatal(err)
	}
	first, err := LoadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "Chart.yaml"), later, later); err != nil {
		t.Fatal(err)
	}
	second, err := LoadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Archive, second.Archive) {
		t.Fatal("the same chart folder packaged twice gives two archives")
	}
	zr, err := gzip.NewReader(bytes.NewReader(first.Archive))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.Header.ModTime.IsZero() || zr.Header.Comment != "Helm" {
		t.Errorf("gzip header: time %v, comment %q; want no time and Helm's comment", zr.Header.ModTime, zr.Header.Comment)
	}
	tr, entries := tar.NewReader(zr), 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries++
		if !h.ModTime.Equal(PackageTime) {
			t.Errorf("%s: modified %v, want %v", h.Name, h.ModTime, PackageTime)
		}
	}
	back, err := LoadArchive(first.Archive)
	if err != nil {
		t.Fatal(err)
	}
	if entries == 0 || back.Name() != first.Name() || len(back.chart.Templates) != len(first.chart.Templates) {
		t.Errorf("reloaded: %d entries, %s with %d templates; want %s with %d", entries, back.Name(), len(back.chart.Templates), first.Name(), len(first.chart.Templates))
	}
}
