package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
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
