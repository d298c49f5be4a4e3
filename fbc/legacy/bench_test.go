package legacy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/internal/sqliteindex"
)

// BenchmarkConvertSQLite converts the database named by AIRLOCK_SQLITE_BENCH_DB
// (docs/benchmarks.md: the 7,022-bundle database built from
// shared/fixtures/large by conformance's TestBuildSQLiteDB), else the demo
// catalog written as a database.
func BenchmarkConvertSQLite(b *testing.B) {
	db := os.Getenv("AIRLOCK_SQLITE_BENCH_DB")
	if db == "" {
		db = demoDB(b)
	}
	b.ReportAllocs()
	for b.Loop() {
		out := filepath.Join(b.TempDir(), "out")
		st, err := ConvertSQLite(context.Background(), db, out, SQLiteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Bundles), "bundles")
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
}

// writeManifestsFixture writes a package-manifest folder of pkgs packages with
// versions versions each (one channel, each CSV replacing the previous one and
// skipping the one before, with the demo's CRD, icon, deployment and related
// images): pkgs×versions bundles.
func writeManifestsFixture(tb testing.TB, dir string, pkgs, versions int) {
	tb.Helper()
	csv, err := os.ReadFile(filepath.Join(demoManifests, "demo-operator", "0.3.0", "demo-operator.v0.3.0.clusterserviceversion.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	crd, err := os.ReadFile(filepath.Join(demoManifests, "demo-operator", "0.3.0", "widgets.crd.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	for p := range pkgs {
		pkg := fmt.Sprintf("bench-operator-%03d", p)
		name := func(v int) string { return fmt.Sprintf("%s.v1.%d.0", pkg, v) }
		for v := range versions {
			vdir := filepath.Join(dir, pkg, fmt.Sprintf("1.%d.0", v))
			if err := os.MkdirAll(vdir, 0o755); err != nil {
				tb.Fatal(err)
			}
			c := strings.NewReplacer("demo-operator.v0.3.0", name(v), "0.3.0", fmt.Sprintf("1.%d.0", v)).Replace(string(csv))
			edges := ""
			if v > 0 {
				edges = "  replaces: " + name(v-1) + "\n"
			}
			if v > 1 {
				edges += "  skips:\n    - " + name(v-2) + "\n"
			}
			c = strings.Replace(c, "  replaces: demo-operator.v0.2.0\n  skips:\n    - demo-operator.v0.1.0\n", edges, 1)
			if err := os.WriteFile(filepath.Join(vdir, name(v)+".clusterserviceversion.yaml"), []byte(c), 0o644); err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(vdir, "widgets.crd.yaml"), crd, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		pm := fmt.Sprintf("packageName: %s\ndefaultChannel: stable\nchannels:\n  - name: stable\n    currentCSV: %s\n", pkg, name(versions-1))
		if err := os.WriteFile(filepath.Join(dir, pkg, pkg+".package.yaml"), []byte(pm), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestWriteManifestsBench writes the benchmark's package-manifest folder (20
// packages × 50 versions) to $AIRLOCK_WRITE_MANIFESTS_BENCH, for the opm side
// of the benchmark (conformance's BenchmarkOpmManifests).
func TestWriteManifestsBench(t *testing.T) {
	dir := os.Getenv("AIRLOCK_WRITE_MANIFESTS_BENCH")
	if dir == "" {
		t.Skip("AIRLOCK_WRITE_MANIFESTS_BENCH not set")
	}
	writeManifestsFixture(t, dir, 20, 50)
}

// BenchmarkConvertManifests converts a package-manifest folder of 1,000
// bundles (20 packages × 50 versions).
func BenchmarkConvertManifests(b *testing.B) {
	src := b.TempDir()
	writeManifestsFixture(b, src, 20, 50)
	b.ReportAllocs()
	for b.Loop() {
		out := filepath.Join(b.TempDir(), "out")
		st, err := ConvertManifests(context.Background(), src, out, ManifestOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Bundles), "bundles")
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
}

// TestWriteSQLiteBench writes the file-based catalog folder
// $AIRLOCK_WRITE_SQLITE_FROM as a SQLite index database at
// $AIRLOCK_WRITE_SQLITE_TO with internal/sqliteindex (minutes, where opm's own
// loader in conformance's TestBuildSQLiteDB takes half an hour for the large
// fixture): a quick database for profiling; the published figures use opm's.
func TestWriteSQLiteBench(t *testing.T) {
	from, to := os.Getenv("AIRLOCK_WRITE_SQLITE_FROM"), os.Getenv("AIRLOCK_WRITE_SQLITE_TO")
	if from == "" || to == "" {
		t.Skip("AIRLOCK_WRITE_SQLITE_FROM and AIRLOCK_WRITE_SQLITE_TO not set")
	}
	c, err := fbc.LoadDir(context.Background(), from, fbc.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sqliteindex.Write(context.Background(), c, to); err != nil {
		t.Fatal(err)
	}
}
