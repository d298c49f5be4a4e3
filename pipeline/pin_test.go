package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// movedOnCatalog is the e2e catalog with baz.v1.2.0, a new head of baz's
// stable channel with an image of its own.
func movedOnCatalog(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e2eCatalog, "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	old := "- name: baz.v1.1.0\n  skipRange: <1.1.0\n  replaces: baz.v1.0.1\n"
	if !strings.Contains(string(b), old) {
		t.Fatal("the e2e catalog changed: baz's channel entries are not where this test expects them")
	}
	s := strings.Replace(string(b), old, old+"- name: baz.v1.2.0\n  replaces: baz.v1.1.0\n", 1)
	s += `---
schema: olm.bundle
package: baz
name: baz.v1.2.0
image: quay.io/redhatgov/oc-mirror-dev:baz-bundle-v1.2.0
properties:
- type: olm.package
  value:
    packageName: baz
    version: 1.2.0
relatedImages:
- name: operator
  image: quay.io/redhatgov/oc-mirror-dev:baz-v1.2.0
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.yaml"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// imageSet is what a run selected: every non-catalog image by where it goes
// (without the registry), its tags and digest, and every catalog by the digest
// of the source catalog and of the rebuilt one.
func imageSet(res *pipeline.Result) []string {
	var out []string
	for _, im := range res.Plan.Images {
		if im.Kind != mirror.KindCatalog {
			_, repo, _ := strings.Cut(im.DestRepo, "/")
			out = append(out, repo+":"+strings.Join(im.Tags, ",")+" "+im.Digest.String())
		}
	}
	for _, c := range res.Plan.Catalogs {
		out = append(out, "catalog "+c.SourceDigest.String()+" "+c.Digest.String()+" "+c.Tag)
	}
	slices.Sort(out)
	return out
}

// TestPinnedConfigReproducesTheRun: every run writes its configuration pinned
// by digest (named in the summary); after the source moved on (the catalog tag
// re-pointed to a newer catalog with an extra bundle, the additional image's
// tag to another image), the pinned configuration selects exactly the images
// of the first run, while the original configuration selects the new ones.
func TestPinnedConfigReproducesTheRun(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := e.config(t, "    - name: baz")
	m2m := func(cfg string) *pipeline.Result {
		t.Helper()
		dst := registrytest.Start(t)
		o := opts(cfg)
		o.Workspace = location.File(t.TempDir())
		o.Destination.Location = location.Docker(dst.Host() + "/mirror")
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		checkMirrored(t, res, dst)
		return res
	}
	first := m2m(cfg)
	pinned := first.PinnedConfig
	if filepath.Dir(pinned) != first.WorkingDir || !strings.HasPrefix(filepath.Base(pinned), workspace.PinnedConfigPrefix) {
		t.Fatalf("pinned configuration %q is not an %s… file of the working directory %s", pinned, workspace.PinnedConfigPrefix, first.WorkingDir)
	}
	body, err := os.ReadFile(pinned)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:\n%s", pinned, body)
	pc, err := imageset.LoadFile(pinned)
	if err != nil {
		t.Fatalf("the pinned configuration does not load: %v\n%s", err, body)
	}
	wantCatalog := e.seeded.Catalog + "@" + first.Plan.Catalogs[0].SourceDigest.String()
	if pc.Mirror.Operators[0].Catalog != wantCatalog || pc.Mirror.AdditionalImages[0].Name != e.extra+"@"+e.extraHash {
		t.Errorf("pinned references: catalog %s (want %s), additional image %s (want %s@%s)", pc.Mirror.Operators[0].Catalog, wantCatalog, pc.Mirror.AdditionalImages[0].Name, e.extra, e.extraHash)
	}
	if !strings.Contains(string(body), "#   baz: baz.v1.1.0\n") {
		t.Errorf("the pinned configuration does not name the selected bundle baz.v1.1.0:\n%s", body)
	}

	// The source moves on.
	if _, err := seed.Seed(context.Background(), seed.Options{
		Registry: e.src.Host(), CatalogDir: movedOnCatalog(t), CatalogRepo: "redhatgov/oc-mirror-index",
		CatalogTag: "v1", MultiArchEvery: 3, Insecure: true, WorkDir: t.TempDir(),
		CatalogPlatforms: []string{"linux/amd64", "linux/arm64"},
	}); err != nil {
		t.Fatal(err)
	}
	imagetest.MustPush(t, e.extra, fakeimage.Spec{Seed: 100, Layers: 2})

	moved := m2m(cfg)
	if slices.Equal(imageSet(moved), imageSet(first)) {
		t.Fatalf("the source did not move on: the original configuration selects the same images:\n%s", strings.Join(imageSet(moved), "\n"))
	}
	again := m2m(pinned)
	if got, want := imageSet(again), imageSet(first); !slices.Equal(got, want) {
		t.Errorf("the pinned configuration selects\n%s\nthe first run selected\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Its own pinned configuration is the same file again (the pins pinned).
	b2, err := os.ReadFile(again.PinnedConfig)
	if err != nil {
		t.Fatal(err)
	}
	if strip := func(b []byte) string { return string(b)[strings.Index(string(b), "apiVersion:"):] }; strip(b2) != strip(body) {
		t.Errorf("pinning a pinned configuration changed it:\n%s\nwas:\n%s", b2, body)
	}
}
