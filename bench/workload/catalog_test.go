package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

// TestCatalogPackages checks the catalog of a workload with several packages
// and older bundles: a valid catalog whose channel heads name every tag once
// (and their bundle images), while the older bundles name only images the
// workload does not have; every reference pinned by digest, or by tag with
// TagRefs.
func TestCatalogPackages(t *testing.T) {
	for _, byTag := range []bool{false, true} {
		t.Run(map[bool]string{false: "by digest", true: "by tag"}[byTag], func(t *testing.T) { testCatalogPackages(t, byTag) })
	}
}

func testCatalogPackages(t *testing.T, byTag bool) {
	o, _ := workload.Preset("tiny")
	o.Packages, o.OlderBundles, o.TagRefs = 3, 2, byTag
	w, err := workload.New(o)
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	for _, tg := range w.Tags {
		tags[w.RefOf(tg, "reg.example:5000")] = true
	}
	if _, err := w.AddCatalog("reg.example:5000"); err != nil {
		t.Fatal(err)
	}
	raw, err := w.CatalogFBC()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "p"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "p", "catalog.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	counts, err := validate.Dir(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("catalog invalid: %v", err)
	}
	if counts.Bundles != 9 {
		t.Errorf("%d bundles, want 3 packages × (2 older + the head)", counts.Bundles)
	}

	var heads, bundles []string
	named := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var d struct {
			Schema, Name, Image string
			RelatedImages       []struct{ Image string }
		}
		if err := dec.Decode(&d); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if d.Schema != "olm.bundle" {
			continue
		}
		head := strings.HasSuffix(d.Name, ".v1.0.0")
		for _, r := range append([]struct{ Image string }{{d.Image}}, d.RelatedImages...) {
			if pinned := strings.Contains(r.Image, "@sha256:"); pinned == byTag {
				t.Errorf("bundle %s names %s: pinned by digest %v, want %v", d.Name, r.Image, pinned, !byTag)
			}
		}
		if head {
			heads = append(heads, d.Name)
			bundles = append(bundles, d.Image)
		}
		for _, r := range d.RelatedImages {
			if head {
				named[r.Image]++
			} else if tags[r.Image] {
				t.Errorf("older bundle %s names %s, a workload tag", d.Name, r.Image)
			}
		}
	}
	sort.Strings(heads)
	if want := []string{"bench-workload-000.v1.0.0", "bench-workload-001.v1.0.0", "bench-workload-002.v1.0.0"}; strings.Join(heads, " ") != strings.Join(want, " ") {
		t.Errorf("heads %v, want %v", heads, want)
	}
	for ref := range tags {
		if named[ref] != 1 {
			t.Errorf("%s named by %d heads, want 1", ref, named[ref])
		}
	}
	for _, b := range bundles {
		if named[b] != 1 {
			t.Errorf("bundle image %s named %d times by the heads, want 1", b, named[b])
		}
	}
	if s := w.Stats(); s.Tags != len(tags)+3+1 {
		t.Errorf("%d tags, want the %d images, 3 bundles and the catalog", s.Tags, len(tags))
	}
}

// TestCatalogsShared checks a workload of several catalogs (the scale
// section's shape): each catalog is valid and holds its share of the
// packages, every tag is named by one catalog's head, every SharedEvery-th
// by two catalogs', repositories sit in their namespaces and some are named
// by two catalogs; AddCatalog refuses several catalogs.
func TestCatalogsShared(t *testing.T) {
	o, _ := workload.Preset("tiny")
	o.Repos, o.Images, o.Indexes = 6, 24, 0
	o.Packages, o.Catalogs, o.SharedEvery, o.Namespaces = 8, 4, 5, 3
	w, err := workload.New(o)
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]int{} // ref → index in w.Tags
	for i, tg := range w.Tags {
		images[w.RefOf(tg, "reg.example:5000")] = i
		if want := fmt.Sprintf("bench/vendor-%02d/app-%04d", (i%6)%3, i%6); tg.Repo != want {
			t.Errorf("tag %d in %s, want %s", i, tg.Repo, want)
		}
	}
	if _, err := w.AddCatalog("reg.example:5000"); err == nil {
		t.Fatal("AddCatalog accepted four catalogs")
	}
	refs, err := w.AddCatalogs("reg.example:5000")
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 4 || len(w.Catalogs) != 4 || w.Catalog != w.Catalogs[0] {
		t.Fatalf("catalogs %v (%d tags), want 4", refs, len(w.Catalogs))
	}
	catalogsOf := map[int]map[int]bool{} // tag index → catalogs naming it
	reposOf := map[string]map[int]bool{} // repository → catalogs naming its tags
	for c, ct := range w.Catalogs {
		if want := fmt.Sprintf("reg.example:5000/bench/workload-catalog-%d:v1", c); refs[c] != want {
			t.Errorf("catalog %d is %s, want %s", c, refs[c], want)
		}
		raw, err := workload.CatalogFBCOf(*ct)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "catalog.json"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		counts, err := validate.Dir(context.Background(), dir, nil)
		if err != nil {
			t.Fatalf("catalog %d invalid: %v", c, err)
		}
		if counts.Packages != 2 {
			t.Errorf("catalog %d holds %d packages, want 8 / 4", c, counts.Packages)
		}
		for _, ref := range relatedImages(t, raw) {
			i, ok := images[ref]
			if !ok {
				continue // bundle images and the older bundles' made-up ones
			}
			if catalogsOf[i] == nil {
				catalogsOf[i] = map[int]bool{}
			}
			catalogsOf[i][c] = true
			repo := w.Tags[i].Repo
			if reposOf[repo] == nil {
				reposOf[repo] = map[int]bool{}
			}
			reposOf[repo][c] = true
		}
	}
	for i := range 24 {
		want := 1
		if i%5 == 0 {
			want = 2
		}
		if len(catalogsOf[i]) != want {
			t.Errorf("tag %d named by catalogs %v, want %d", i, catalogsOf[i], want)
		}
	}
	shared := 0
	for _, cs := range reposOf {
		if len(cs) > 1 {
			shared++
		}
	}
	if shared == 0 {
		t.Errorf("no repository named by two catalogs: %v", reposOf)
	}
}

// relatedImages returns every relatedImages entry of the bundles of a
// file-based catalog.
func relatedImages(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var d struct{ RelatedImages []struct{ Image string } }
		if err := dec.Decode(&d); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		for _, r := range d.RelatedImages {
			out = append(out, r.Image)
		}
	}
}
