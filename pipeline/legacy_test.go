package pipeline_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/internal/sqliteindex"
	"github.com/airlock-mirror/airlock/internal/testutil/legacytest"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/prune"
)

// TestPruneSQLiteDirect: pruning a SQLite index database directly (only the
// kept bundles converted) writes the same files and explanation as converting
// it whole and pruning the result, or refuses alike, for each configuration.
func TestPruneSQLiteDirect(t *testing.T) {
	t.Parallel()
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
		c, err := fbc.LoadDir(context.Background(), dir, fbc.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dbs[name] = filepath.Join(t.TempDir(), name+".db")
		if err := sqliteindex.Write(context.Background(), c, dbs[name]); err != nil {
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
			if got := legacytest.ComparePrune(t, dbs[e.catalog], cfg, pruneBothWays); got != e.kept {
				t.Errorf("kept %d bundles, want %d", got, e.kept)
			}
		})
	}
}

// TestPruneSQLiteDamagedManifests: a bundle whose manifests are not JSON is
// refused, naming it, when the prune keeps it; when the prune drops it, the
// direct prune does not read it (the documented difference with converting the
// whole database, which refuses it).
func TestPruneSQLiteDamagedManifests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, bundle string
		refused      bool
	}{
		{"kept", "demo-operator.v1.2.1", true},
		{"dropped", "demo-operator.v1.0.0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := fbc.LoadDir(context.Background(), "../testdata/demo/catalog", fbc.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(t.TempDir(), "index.db")
			if err := sqliteindex.Write(context.Background(), c, db); err != nil {
				t.Fatal(err)
			}
			sdb, err := sql.Open("sqlite", "file:"+db)
			if err != nil {
				t.Fatal(err)
			}
			res, err := sdb.Exec(`UPDATE operatorbundle SET bundle = '{"kind": "ClusterServiceVersion",' WHERE name = ?`, tc.bundle)
			if n, _ := res.RowsAffected(); err != nil || n != 1 {
				t.Fatalf("damaging %s: %v (%d rows)", tc.bundle, err, n)
			}
			sdb.Close()
			cfg := filepath.Join(t.TempDir(), "isc.yaml")
			if err := os.WriteFile(cfg, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: oci://"+db+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = pipeline.PruneLocal(context.Background(), pipeline.PruneOptions{ConfigPath: cfg, Source: db, OutDir: filepath.Join(t.TempDir(), "out")})
			t.Logf("direct prune: %v", err)
			if tc.refused != (err != nil) {
				t.Fatalf("refused: %v, want %v", err, tc.refused)
			}
			if err != nil && (!strings.Contains(err.Error(), tc.bundle) || !strings.Contains(err.Error(), "operatorbundle.bundle")) {
				t.Errorf("the error does not name the bundle and its manifests: %v", err)
			}
			if _, err := legacy.ConvertSQLite(context.Background(), db, filepath.Join(t.TempDir(), "whole"), legacy.SQLiteOptions{}); err == nil || !strings.Contains(err.Error(), tc.bundle) {
				t.Errorf("converting the whole database: %v, want an error naming %s", err, tc.bundle)
			}
		})
	}
}

// pruneBothWays is legacytest.Prune with pipeline's two ways.
func pruneBothWays(ctx context.Context, config, db, dir, out string) (*prune.Explanation, error) {
	o := pipeline.PruneOptions{ConfigPath: config, Source: db, Dir: dir, OutDir: out}
	f := pipeline.PruneLocal
	if dir != "" {
		f = pipeline.PruneDir
	}
	r, err := f(ctx, o)
	if err != nil {
		return nil, err
	}
	return r.Explanation, nil
}
