package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/legacytest"
	"github.com/airlock-mirror/airlock/internal/sqlitetest"
	"github.com/airlock-mirror/airlock/prune"
)

// TestPruneSQLiteDirect: pruning a SQLite index database directly (only the
// kept bundles converted) writes the same files and explanation as converting
// it whole and pruning the result, or refuses alike, for each configuration.
func TestPruneSQLiteDirect(t *testing.T) {
	catalogs := map[string]string{
		"demo":   "../testdata/demo/catalog",
		"sample": filepath.Join(pruneTestdata, "_catalogs", "sample"),
	}
	entries := []struct {
		name, catalog, entry string
		kept                 int // -1: refused
	}{
		{"demo heads", "demo", "", 5},
		{"demo full", "demo", "    full: true\n", 13},
		{"demo one package", "demo", "    packages:\n    - name: demo-operator\n", 5},
		{"demo channel range", "demo", "    packages:\n    - name: demo-operator\n      channels:\n      - name: stable\n        minVersion: 1.1.0\n", 6},
		{"demo no dependencies", "demo", "    skipDependencies: true\n    packages:\n    - name: demo-operator\n", 2},
		{"demo max version", "demo", "    packages:\n    - name: demo-database\n      maxVersion: 2.0.0\n", 2},
		{"demo missing package", "demo", "    packages:\n    - name: demo-operater\n", -1},
		{"demo bad range", "demo", "    packages:\n    - name: demo-operator\n      minVersion: 9.0.0\n", -1},
		{"sample heads", "sample", "", 8},
		{"sample full", "sample", "    full: true\n", 15},
		{"sample bundles", "sample", "    packages:\n    - name: etcd\n      bundles:\n      - name: etcd.v1.1.0\n", 4},
	}
	dbs := map[string]string{}
	for name, dir := range catalogs {
		c, err := prune.LoadDir(context.Background(), dir, prune.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dbs[name] = filepath.Join(t.TempDir(), name+".db")
		if err := sqlitetest.Write(context.Background(), c, dbs[name]); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries {
		t.Run(e.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "isc.yaml")
			isc := "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: oci://" + dbs[e.catalog] + "\n" + e.entry
			if err := os.WriteFile(cfg, []byte(isc), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := legacytest.ComparePrune(t, dbs[e.catalog], cfg); got != e.kept {
				t.Errorf("kept %d bundles, want %d", got, e.kept)
			}
		})
	}
}
