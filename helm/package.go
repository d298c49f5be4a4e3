package helm

import (
	"encoding/json"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Package writes a loaded chart as a chart archive (.tgz), as helm package
// does.
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
	return os.ReadFile(filepath.Clean(p))
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
