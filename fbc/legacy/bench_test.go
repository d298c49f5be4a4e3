package legacy

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/gen/manifests/gen"
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

// BenchmarkConvertManifests converts a package-manifest folder of 1,000
// bundles (20 packages × 50 versions).
func BenchmarkConvertManifests(b *testing.B) {
	src := b.TempDir()
	if err := gen.Write(src, filepath.Join(demoManifests, "demo-operator", "0.3.0"), 20, 50); err != nil {
		b.Fatal(err)
	}
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
