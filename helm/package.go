package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// PackageTime is the modification time of every entry of an archive Package
// writes: helm package stamps the time of packaging, which would give the same
// chart folder a new archive, and a new artifact digest, on every run.
var PackageTime = time.Unix(0, 0).UTC()

// Package writes a loaded chart as a chart archive (.tgz), as helm package
// does, but reproducibly: the same chart gives the same bytes (PackageTime).
func Package(ch *chart.Chart) ([]byte, error) {
	dir, err := os.MkdirTemp("", "airlock-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Clean(p))
	if err != nil {
		return nil, err
	}
	return reproducible(data)
}

// reproducible rewrites an archive chartutil.Save wrote with every time
// PackageTime (the gzip header's none), keeping Helm's gzip comment and extra.
func reproducible(archive []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Header = gzip.Header{Comment: zr.Header.Comment, Extra: zr.Header.Extra, OS: zr.Header.OS}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = PackageTime, time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
