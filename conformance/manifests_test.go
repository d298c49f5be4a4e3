package conformance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/internal/gen/manifests/gen"
)

// TestManifestsAgreement: a package-manifest folder converts the same with
// airlock (legacy.ConvertManifests) as with opm v1.73 (its directory loader,
// NewSQLLoaderForDirectory, into a database, then sqlite.ToModel and declcfg as
// `opm migrate`), on every package-manifest folder of operator-registry's test
// data. Both refuse the same folders; with Permissive, airlock converts what
// opm's loader left in its database, and the results are compared too.
func TestManifestsAgreement(t *testing.T) {
	root := opmModuleDir(t)
	dirs := map[string]string{"airlock/fbc/legacy/testdata/manifests": filepath.Join("..", "fbc", "legacy", "testdata", "manifests")}
	for _, d := range opmManifestDirs {
		dirs[d] = filepath.Join(root, filepath.FromSlash(d))
	}
	for d, dir := range dirs {
		t.Run(d, func(t *testing.T) {
			db, loadErr := opmManifestsDB(t, dir)
			want, renderErr := opmRenderDB(t, db)

			out := filepath.Join(t.TempDir(), "strict")
			_, ourErr := legacy.ConvertManifests(t.Context(), dir, out, legacy.ManifestOptions{})
			opmFails := loadErr != nil || renderErr != nil
			if opmFails != (ourErr != nil) {
				t.Fatalf("opm and airlock disagree on loading %s:\nopm loader: %v\nopm render: %v\nairlock:    %v", d, loadErr, renderErr, ourErr)
			}
			if ourErr != nil {
				t.Logf("both refuse:\nopm loader: %v\nopm render: %v\nairlock: %v", loadErr, renderErr, ourErr)
			}

			perm := filepath.Join(t.TempDir(), "permissive")
			st, permErr := legacy.ConvertManifests(t.Context(), dir, perm, legacy.ManifestOptions{Permissive: true})
			if (renderErr != nil) != (permErr != nil) {
				t.Fatalf("opm and airlock disagree on converting what loads of %s:\nopm:     %v\nairlock: %v", d, renderErr, permErr)
			}
			if renderErr != nil {
				return
			}
			compareConverted(t, d, want, perm)
			t.Logf("%d packages, %d channels, %d bundles agree", st.Packages, st.Channels, st.Bundles)
		})
	}
}

// manifestsBenchDir is the package-manifest folder both sides of the
// conversion benchmark read: $AIRLOCK_MANIFESTS_BENCH_DIR when set, else one
// generated like legacy's BenchmarkConvertManifests (20 packages × 50
// versions, internal/gen/manifests).
func manifestsBenchDir(b *testing.B) string {
	if dir := os.Getenv("AIRLOCK_MANIFESTS_BENCH_DIR"); dir != "" {
		return dir
	}
	dir := b.TempDir()
	if err := gen.Write(dir, "../fbc/legacy/testdata/manifests/demo-operator/0.3.0", 20, 50); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkOpmManifests is opm v1.73's side of legacy's
// BenchmarkConvertManifests: the package-manifest folder (manifestsBenchDir)
// loaded by opm's directory loader into a database, then converted as `opm
// migrate` does.
func BenchmarkOpmManifests(b *testing.B) {
	dir := manifestsBenchDir(b)
	b.ReportAllocs()
	for b.Loop() {
		db, err := opmManifestsDB(b, dir)
		if err != nil {
			b.Fatal(err)
		}
		cfg, err := opmRenderDB(b, db)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(cfg.Bundles)), "bundles")
	}
}

// BenchmarkAirlockManifests is airlock's side, on the same folder.
func BenchmarkAirlockManifests(b *testing.B) {
	dir := manifestsBenchDir(b)
	b.ReportAllocs()
	for b.Loop() {
		st, err := legacy.ConvertManifests(b.Context(), dir, filepath.Join(b.TempDir(), "out"), legacy.ManifestOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Bundles), "bundles")
	}
}
