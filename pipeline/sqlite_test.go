package pipeline_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/prune"
)

// setupSQLite seeds the e2e catalog as an old SQLite index image (`opm index
// add`): the database at /database/index.db and its label, no /configs.
func setupSQLite(t *testing.T) *env {
	t.Helper()
	if _, err := os.Stat(e2eCatalog); err != nil {
		t.Skipf("fixture catalog not found: %v", err)
	}
	src := registrytest.Start(t)
	res, err := seed.Seed(context.Background(), seed.Options{
		Registry: src.Host(), CatalogDir: e2eCatalog, CatalogRepo: "redhatgov/oc-mirror-sqlite-index",
		CatalogTag: "v4.9", Insecure: true, WorkDir: t.TempDir(), SQLiteIndex: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	extra := src.Host() + "/tools/debug:1.0"
	p := imagetest.MustPush(t, extra, fakeimage.Spec{Seed: 99, Layers: 2})
	return &env{src: src, seeded: res, extra: extra, extraHash: p.Digest.String()}
}

// fbcHeads are the channel heads the same selection keeps from the e2e catalog
// mirrored as a file-based catalog: what the SQLite index must give too.
func fbcHeads(t *testing.T, pkg string) []string {
	t.Helper()
	cat, err := fbc.LoadDir(context.Background(), e2eCatalog, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	pruned, _, err := prune.Filter(cat, imageset.Operator{Catalog: "x", Packages: []imageset.IncludePackage{{Name: pkg}}}, prune.FilterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return heads(t, pruned)
}

func heads(t *testing.T, c *fbc.Catalog) []string {
	t.Helper()
	var out []string
	for _, p := range c.Packages {
		for _, ch := range p.Channels {
			h, err := fbc.NewGraph(ch).Head()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Name+"/"+ch.Name+"="+h)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatal("no channel")
	}
	return out
}

// checkSQLiteRebuilt asserts that the catalog mirrored from the SQLite index is
// a file-based catalog image (configs label, no database label or file, serve
// /configs) whose channels have the wanted heads.
func checkSQLiteRebuilt(t *testing.T, res *pipeline.Result, dst *registrytest.Registry, wantHeads []string) {
	t.Helper()
	checkMirrored(t, res, dst)
	c := res.Catalogs[0]
	ctx := context.Background()
	fc, err := catalogimage.Fetch(ctx, c.DestRepo+":"+c.Tag, t.TempDir(), catalogimage.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fc.Database != "" || fc.Label != "/configs" {
		t.Errorf("rebuilt catalog: label %q, database %q; want a file-based catalog in /configs", fc.Label, fc.Database)
	}
	cfg, err := fc.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Config.Labels[catalogimage.DatabaseLabel]; ok {
		t.Errorf("rebuilt catalog keeps the database label: %v", cfg.Config.Labels)
	}
	if got := strings.Join(append(cfg.Config.Entrypoint, cfg.Config.Cmd...), " "); got != "/bin/opm serve /configs" {
		t.Errorf("rebuilt catalog runs %q, want /bin/opm serve /configs", got)
	}
	// The database file is gone from the image's filesystem.
	layers, err := fc.Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	top, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	names := tarNames(t, top)
	if !names["database/.wh.index.db"] || !names["configs/"] {
		t.Errorf("the rebuilt catalog's layer does not delete /database/index.db")
	}
	cat, err := fbc.LoadDir(ctx, fc.ConfigsDir, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("heads: %v", wantHeads)
	if got := heads(t, cat); strings.Join(got, " ") != strings.Join(wantHeads, " ") {
		t.Errorf("heads of the rebuilt catalog:\n%v\nwant (as from the file-based catalog)\n%v", got, wantHeads)
	}
}

func TestSQLiteIndexMirrorToMirror(t *testing.T) {
	t.Parallel()
	e := setupSQLite(t)
	dst := registrytest.Start(t)
	o := opts(e.config(t, "    - name: foo"))
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkSQLiteRebuilt(t, res, dst, fbcHeads(t, "foo"))
}

func TestSQLiteIndexMirrorToDiskToMirror(t *testing.T) {
	t.Parallel()
	e := setupSQLite(t)
	dir := t.TempDir()
	o := opts(e.config(t, "    - name: baz"))
	o.Destination.Location = location.File(dir)
	if _, err := pipeline.Mirror(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	e.src.Stop()
	dst := registrytest.Start(t)
	o2 := opts(o.ConfigPath)
	o2.Archive.From = location.File(dir)
	o2.Workspace = location.File(t.TempDir())
	o2.Destination.Location = location.Docker(dst.Host() + "/airgap")
	res, err := pipeline.Mirror(context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	checkSQLiteRebuilt(t, res, dst, fbcHeads(t, "baz"))
}

func TestSQLiteIndexListOperators(t *testing.T) {
	t.Parallel()
	e := setupSQLite(t)
	l, err := pipeline.ListOperators(context.Background(), pipeline.ListOperatorsOptions{Catalog: e.seeded.Catalog, WorkDir: filepath.Join(t.TempDir(), "w")})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := l.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"bar", "baz", "foo"} {
		if !strings.Contains(sb.String(), p) {
			t.Errorf("list operators of the SQLite index lacks %s:\n%s", p, sb.String())
		}
	}
}

// tarNames returns the entry names of the tar stream r.
func tarNames(t *testing.T, r io.Reader) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = true
	}
}
