package graph

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
)

// largestPackage is the package of shared/fixtures/large with the most channel
// entries (459 in 11 channels).
const largestPackage = "assisted-service-operator"

// largeCatalogPackage returns a catalog directory holding only the largest
// package of the large fixture: /tmp/airlock-large/catalog (unpacked by make
// bench) when there, else that one file extracted from the archive.
func largeCatalogPackage(b *testing.B) string {
	if d := filepath.Join("/tmp/airlock-large/catalog", largestPackage); fileExists(filepath.Join(d, "catalog.json")) {
		return d
	}
	dir := fixtures.Large()
	archive := filepath.Join(dir, "community-operators-prod-all.tar.zst")
	if dir == "" || !fileExists(archive) {
		fixtures.Missing(b, "the real-scale catalog large/community-operators-prod-all.tar.zst is absent")
	}
	out := b.TempDir()
	cmd := exec.Command("sh", "-c", `zstd -dc "$1" | tar -xf - -C "$2" "catalog/$3/catalog.json"`, "sh", archive, out, largestPackage)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Skipf("cannot extract %s (zstd, tar): %v %s", largestPackage, err, msg)
	}
	return filepath.Join(out, "catalog", largestPackage)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// BenchmarkGraphLargest is `airlock catalog graph -o x.svg` on the largest
// package of the large fixture: load, build, Graphviz layout, SVG.
func BenchmarkGraphLargest(b *testing.B) {
	dir := largeCatalogPackage(b)
	b.ResetTimer()
	for b.Loop() {
		if err := Draw(context.Background(), DrawOptions{Dir: dir, Package: largestPackage, Format: FormatSVG, Collapse: DefaultCollapse}, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
