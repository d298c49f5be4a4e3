package prune

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
)

// TestImagesFiltered: the images of a filtered sample catalog are those of its
// kept bundles only.
func TestImagesFiltered(t *testing.T) {
	c := loadFilterCatalog(t, filepath.Join(filterTestdata, "_catalogs", "sample"))
	all, warns := fbc.Images(c)
	if len(warns) != 2 { // one empty related image, one tagless
		t.Errorf("warnings: %q", warns)
	}
	heads := realConfigs(c)["heads-nodeps"]
	out, _, err := Filter(c, heads, FilterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := fbc.Images(out)
	if len(kept) >= len(all) {
		t.Errorf("heads-only kept %d of %d images", len(kept), len(all))
	}
	for _, u := range kept {
		for _, r := range u.Bundles {
			found := false
			for _, p := range out.Packages {
				for _, b := range p.Bundles {
					found = found || (p.Name == r.Package && b.Name == r.Bundle)
				}
			}
			if !found {
				t.Errorf("image %s used by %v, which is not kept", u.Image, r)
			}
		}
	}
}

// TestImagesReal checks Images on every real catalog: sorted, unique, and every
// non-empty reference present.
func TestImagesReal(t *testing.T) {
	base := fixtures.Require(t, "real-catalogs")
	for _, rel := range filterFixtureRoots(t, base) {
		if testing.Short() && strings.HasPrefix(rel, "community-operators-prod") {
			continue // the largest fixtures; loading them under -race takes long
		}
		c := loadFixtureCatalog(t, filepath.Join(base, rel))
		uses, _ := fbc.Images(c)
		seen := map[string]bool{}
		for i, u := range uses {
			if i > 0 && uses[i-1].Image >= u.Image {
				t.Errorf("%s: not sorted/unique at %s", rel, u.Image)
			}
			seen[u.Image] = true
		}
		for _, p := range c.Packages {
			for _, b := range p.Bundles {
				for _, ri := range b.RelatedImages {
					if ri.Image != "" && !seen[ri.Image] && !seen[ri.Image+":latest"] {
						t.Errorf("%s: %s missing", rel, ri.Image)
					}
				}
			}
		}
	}
}
