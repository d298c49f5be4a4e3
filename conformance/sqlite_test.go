package conformance

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/sqlite"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
	"github.com/airlock-mirror/airlock/internal/testutil/legacytest"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/prune"
)

func encodeB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// opmRenderDB is `opm render DB` of opm v1.73: sqlite.ToModel then
// declcfg.ConvertFromModel, then what alpha/action's render does after them
// (its helpers are unexported, and importing alpha/action drags in gpgme through
// containers/image): the images of the related_image table each bundle's CSV
// does not list are added without a name, bundle objects move after the other
// properties, related images are sorted by image. opm migrates the schema of
// the file it reads, so it reads a copy.
func opmRenderDB(t testing.TB, db string) (*declcfg.DeclarativeConfig, error) {
	t.Helper()
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sdb, err := sqlite.Open(cp)
	if err != nil {
		return nil, err
	}
	defer sdb.Close()
	mig, err := sqlite.NewSQLLiteMigrator(sdb)
	if err != nil {
		return nil, err
	}
	if err := mig.Migrate(t.Context()); err != nil {
		return nil, err
	}
	m, err := sqlite.ToModel(t.Context(), sqlite.NewSQLLiteQuerierFromDb(sdb))
	if err != nil {
		return nil, err
	}
	cfg := declcfg.ConvertFromModel(m)
	rows, err := sdb.QueryContext(t.Context(), "SELECT image, operatorbundle_name FROM related_image")
	if err != nil {
		return nil, err
	}
	extra := map[string]map[string]bool{}
	for rows.Next() {
		var img, name sql.NullString
		if err := rows.Scan(&img, &name); err != nil {
			rows.Close()
			return nil, err
		}
		if img.Valid && name.Valid {
			if extra[name.String] == nil {
				extra[name.String] = map[string]bool{}
			}
			extra[name.String][img.String] = true
		}
	}
	rows.Close()
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		for _, ri := range b.RelatedImages {
			delete(extra[b.Name], ri.Image)
		}
		for img := range extra[b.Name] {
			b.RelatedImages = append(b.RelatedImages, declcfg.RelatedImage{Image: img})
		}
		var others, objs []property.Property
		for _, p := range b.Properties {
			if p.Type == property.TypeBundleObject || p.Type == property.TypeCSVMetadata {
				objs = append(objs, p)
			} else {
				others = append(others, p)
			}
		}
		b.Properties = append(others, objs...)
		sort.SliceStable(b.RelatedImages, func(i, j int) bool { return b.RelatedImages[i].Image < b.RelatedImages[j].Image })
	}
	return &cfg, nil
}

// compareDB converts db with airlock and with opm and compares the catalogs
// document by document, and the files byte for byte with opm's JSON writer.
func compareDB(t *testing.T, db string) {
	t.Helper()
	want, opmErr := opmRenderDB(t, db)
	out := filepath.Join(t.TempDir(), "fbc")
	st, ourErr := legacy.ConvertSQLite(t.Context(), db, out, legacy.SQLiteOptions{})
	if (opmErr != nil) != (ourErr != nil) {
		t.Fatalf("opm and airlock disagree on converting %s:\nopm:     %v\nairlock: %v", db, opmErr, ourErr)
	}
	if opmErr != nil {
		t.Logf("both refuse: opm: %v; airlock: %v", opmErr, ourErr)
		return
	}
	compareConverted(t, db, want, out)
	t.Logf("%d packages, %d channels, %d bundles agree", st.Packages, st.Channels, st.Bundles)
	comparePruneDB(t, db)
}

// comparePruneDB prunes db heads-only and whole (full: true) directly
// (pipeline.PruneLocal converts only the bundles it keeps) and by converting it
// whole first: the results must be the same bytes, or the same refusal.
func comparePruneDB(t *testing.T, db string) {
	t.Helper()
	for name, entry := range map[string]string{"heads": "", "full": "    full: true\n"} {
		cfg := filepath.Join(t.TempDir(), name+".yaml")
		isc := "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: oci://" + db + "\n" + entry
		if err := os.WriteFile(cfg, []byte(isc), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("pruned %s directly and converted whole: %d bundles kept, the same", name, legacytest.ComparePrune(t, db, cfg, pruneBothWays))
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

// compareConverted compares airlock's conversion of src in out with opm's
// (want), document by document, then each <package>/catalog.json byte for byte
// with opm's JSON writer.
func compareConverted(t *testing.T, src string, want *declcfg.DeclarativeConfig, out string) {
	t.Helper()
	db := src
	got, err := fbc.LoadDir(t.Context(), out, fbc.LoadOptions{})
	if err != nil {
		t.Fatalf("loading airlock's conversion: %v", err)
	}
	if d := canonOpm(want).diff(canonOurs(got), 20); d != "" {
		t.Fatalf("opm (first) and airlock (second) convert %s differently:\n%s", db, d)
	}
	if err := opmValidate(t.Context(), out); err != nil {
		t.Errorf("opm validate refuses airlock's conversion: %v", err)
	}
	// opm migrate writes one <package>/catalog.json per package with its JSON
	// writer: the files must be the same bytes.
	for _, p := range want.Packages {
		var buf bytes.Buffer
		one := declcfg.DeclarativeConfig{Packages: []declcfg.Package{p}}
		for _, c := range want.Channels {
			if c.Package == p.Name {
				one.Channels = append(one.Channels, c)
			}
		}
		for _, b := range want.Bundles {
			if b.Package == p.Name {
				one.Bundles = append(one.Bundles, b)
			}
		}
		if err := declcfg.WriteJSON(one, &buf); err != nil {
			t.Fatal(err)
		}
		ours, err := os.ReadFile(filepath.Join(out, p.Name, "catalog.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, buf.Bytes()) {
			t.Errorf("package %s: airlock's catalog.json (%d bytes) differs from opm's JSON (%d bytes) at byte %d", p.Name, len(ours), buf.Len(), firstDiff(ours, buf.Bytes()))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// opmManifestDirs are the package-manifest folders of operator-registry's own
// test data (relative to its module root).
var opmManifestDirs = []string{
	"manifests",
	"pkg/sqlite/testdata/loader_data",
	"pkg/registry/testdata/validPackages",
	"pkg/registry/testdata/invalidPackges",
	"pkg/sqlite/testdata/incorrectbundle",
	"test/e2e/testdata",
	"pkg/lib/indexer/testdata",
}

// TestSQLiteAgreementManifests: databases built by opm's loader from its own
// package-manifest test data convert the same with airlock and with opm.
func TestSQLiteAgreementManifests(t *testing.T) {
	root := opmModuleDir(t)
	for _, d := range opmManifestDirs {
		t.Run(d, func(t *testing.T) {
			db, err := opmManifestsDB(t, filepath.Join(root, filepath.FromSlash(d)))
			if err != nil {
				t.Logf("opm's loader reported: %v", err)
			}
			compareDB(t, db)
		})
	}
}

// TestSQLiteAgreementReal: databases built by opm's loader from every real
// catalog of the shared fixtures convert the same with airlock and with opm.
func TestSQLiteAgreementReal(t *testing.T) {
	srcs := realSources(t)
	if len(srcs) == 0 {
		fixtures.Missing(t, "no real catalogs under %q", realCatalogsDir)
	}
	for _, s := range srcs {
		t.Run(s.Name, func(t *testing.T) {
			db, loaded, refused := opmCatalogDB(t, s.Dir)
			t.Logf("opm's loader: %d packages loaded, %d refused", loaded, refused)
			if loaded == 0 {
				t.Fatalf("no package of %s could be loaded", s.Dir)
			}
			compareDB(t, db)
		})
	}
}

// opmModuleDir is the root of the operator-registry module in the module cache.
func opmModuleDir(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/operator-framework/operator-registry").Output()
	if err != nil {
		t.Fatalf("locating operator-registry: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("operator-registry is not in the module cache (go mod download)")
	}
	return dir
}

// TestSQLiteAgreementDeprecated: bundles deprecated with opm's
// deprecation-aware loader (`opm index deprecatetruncate`: the bundle is marked
// olm.deprecated and the channels are truncated below it) convert the same.
func TestSQLiteAgreementDeprecated(t *testing.T) {
	srcs := realSources(t)
	if len(srcs) == 0 {
		fixtures.Missing(t, "no real catalogs under %q", realCatalogsDir)
	}
	for _, s := range srcs {
		if s.Name != "real/community-operators-prod-v4.16" && s.Name != "real/kube-descheduler-v4.20" {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			db, _, _ := opmCatalogDB(t, s.Dir)
			n := deprecateSecond(t, db)
			t.Logf("%d bundles deprecated", n)
			if n == 0 {
				t.Fatal("nothing deprecated")
			}
			compareDB(t, db)
		})
	}
}

// deprecateSecond deprecates, in every package, the bundle the head of the
// default channel replaces, and returns how many it deprecated.
func deprecateSecond(t testing.TB, file string) int {
	t.Helper()
	sdb, err := sqlite.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	rows, err := sdb.Query(`SELECT ob.bundlepath FROM package p
		JOIN channel c ON c.package_name = p.name AND c.name = p.default_channel
		JOIN operatorbundle h ON h.name = c.head_operatorbundle_name
		JOIN operatorbundle ob ON ob.name = h.replaces
		WHERE ob.bundlepath IS NOT NULL AND ob.bundlepath != ''`)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rows.Close()
	loader, err := sqlite.NewDeprecationAwareLoader(sdb)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range paths {
		if err := loader.DeprecateBundle(p); err != nil {
			t.Logf("opm could not deprecate %s: %v", p, err)
			continue
		}
		n++
	}
	return n
}
