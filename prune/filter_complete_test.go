package prune

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
)

// TestFilterComplete: FilterOptions.Complete sees every kept bundle once, what
// it returns is what the result holds and is validated, its error is Filter's,
// and the source catalog is left as it was.
func TestFilterComplete(t *testing.T) {
	root := filepath.Join(filterTestdata, "_catalogs", "sample")
	tests := []struct {
		name    string
		op      imageset.Operator
		change  func(*fbc.Bundle) *fbc.Bundle
		fail    error
		wantErr string
	}{
		{name: "heads", change: func(b *fbc.Bundle) *fbc.Bundle {
			nb := *b
			nb.RelatedImages = append(nb.RelatedImages, fbc.RelatedImage{Name: "added", Image: "quay.io/x/added:1"})
			return &nb
		}},
		{name: "whole", op: imageset.Operator{Full: true}, change: func(b *fbc.Bundle) *fbc.Bundle {
			nb := *b
			nb.RelatedImages = append(nb.RelatedImages, fbc.RelatedImage{Name: "added", Image: "quay.io/x/added:1"})
			return &nb
		}},
		{name: "invalid result", change: func(b *fbc.Bundle) *fbc.Bundle {
			nb := *b
			nb.RelatedImages = []fbc.RelatedImage{{Image: "oci://not/a/reference"}}
			return &nb
		}, wantErr: "invalid image pull spec"},
		{name: "whole invalid", op: imageset.Operator{Full: true}, change: func(b *fbc.Bundle) *fbc.Bundle {
			nb := *b
			nb.Image = "oci://nope"
			return &nb
		}, wantErr: "invalid image pull spec"},
		{name: "error", fail: errors.New("no manifests for you"), wantErr: "no manifests for you"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := loadFilterCatalog(t, root)
			before := listing(src)
			seen := map[string]int{}
			out, _, err := Filter(src, tc.op, FilterOptions{Complete: func(b *fbc.Bundle) (*fbc.Bundle, error) {
				seen[b.Package+"/"+b.Name]++
				if tc.fail != nil {
					return nil, tc.fail
				}
				return tc.change(b), nil
			}})
			if after := listing(src); after != before {
				t.Errorf("the source catalog changed:\n%s\nwas\n%s", after, before)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, p := range out.Packages {
				for _, b := range p.Bundles {
					n++
					if seen[p.Name+"/"+b.Name] != 1 {
						t.Errorf("bundle %s/%s completed %d times", p.Name, b.Name, seen[p.Name+"/"+b.Name])
					}
					if len(b.RelatedImages) == 0 || b.RelatedImages[len(b.RelatedImages)-1].Name != "added" {
						t.Errorf("bundle %s/%s is not the completed one", p.Name, b.Name)
					}
				}
			}
			if n == 0 || n != len(seen) {
				t.Errorf("%d bundles kept, %d completed", n, len(seen))
			}
			for _, p := range src.Packages {
				for _, b := range p.Bundles {
					for _, ri := range b.RelatedImages {
						if ri.Name == "added" {
							t.Fatalf("source bundle %s changed", b.Name)
						}
					}
				}
			}
		})
	}
}

// TestWriteProperties: Write and Render write what a bundle's WriteProperties
// function returns, in place of its properties, and report its error.
func TestWriteProperties(t *testing.T) {
	src := loadFilterCatalog(t, filepath.Join(filterTestdata, "_catalogs", "sample"))
	b := src.Packages[0].Bundles[0]
	light := b.Properties
	full := append(append([]fbc.Property(nil), light...), fbc.Property{Type: fbc.PropertyBundleObject, Value: []byte(`{"data":"e30="}`)})
	b.WriteProperties(func() ([]fbc.Property, error) { return full, nil })
	var buf bytes.Buffer
	if err := fbc.Render(context.Background(), &fbc.Catalog{Packages: []*fbc.Package{src.Packages[0]}}, &buf, fbc.FormatJSON); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), `"data": "e30="`); got != 1 {
		t.Errorf("the written properties hold the added object %d times, want 1:\n%s", got, buf.String())
	}
	if len(b.Properties) != len(light) {
		t.Errorf("the bundle's properties changed")
	}
	b.WriteProperties(func() ([]fbc.Property, error) { return nil, errors.New("database gone") })
	err := fbc.Write(context.Background(), &fbc.Catalog{Packages: []*fbc.Package{src.Packages[0]}}, t.TempDir(), fbc.WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "database gone") || !strings.Contains(err.Error(), b.Name) {
		t.Errorf("error %v, want the function's, naming bundle %s", err, b.Name)
	}
}
