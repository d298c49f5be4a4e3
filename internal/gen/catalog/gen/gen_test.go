package gen

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

func TestGenerateValid(t *testing.T) {
	ctx := context.Background()
	small, err := Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts Options
	}{
		{"small", small},
		{"one bundle", Options{Packages: 3, BundlesPerPackage: 1, Related: 1, Seed: 2}},
		{"two bundles", Options{Packages: 2, BundlesPerPackage: 2, Related: 2, ObjectKB: 1, Seed: 3}},
		{"long chains", Options{Packages: 12, BundlesPerPackage: 40, Related: 6, ObjectKB: 1, Objects: 1, Seed: 4}},
		{"yaml", Options{Packages: 4, BundlesPerPackage: 9, Related: 3, ObjectKB: 1, Seed: 5, Format: "yaml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "catalog")
			if err := Generate(ctx, tc.opts, dir); err != nil {
				t.Fatal(err)
			}
			c, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{ElideHeavy: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := validate.Catalog(c); err != nil {
				t.Fatalf("generated catalog is invalid: %v", err)
			}
			if len(c.Packages) != tc.opts.Packages {
				t.Fatalf("got %d packages, want %d", len(c.Packages), tc.opts.Packages)
			}
			var deps, objects, channels int
			for _, p := range c.Packages {
				if p.Declared != 1 {
					t.Errorf("package %s declared %d times", p.Name, p.Declared)
				}
				if len(p.Bundles) != tc.opts.BundlesPerPackage {
					t.Errorf("package %s: %d bundles, want %d", p.Name, len(p.Bundles), tc.opts.BundlesPerPackage)
				}
				hasDefault := false
				inChannel := map[string]bool{}
				for _, ch := range p.Channels {
					channels++
					hasDefault = hasDefault || ch.Name == p.DefaultChannel
					g := fbc.NewGraph(ch)
					head, err := g.Head()
					if err != nil {
						t.Fatalf("%s/%s: %v", p.Name, ch.Name, err)
					}
					chain, err := g.ReplacesChain(head)
					if err != nil {
						t.Fatalf("%s/%s: %v", p.Name, ch.Name, err)
					}
					if s := g.Stranded(chain); len(s) > 0 {
						t.Fatalf("%s/%s: stranded %v", p.Name, ch.Name, s)
					}
					for _, e := range ch.Entries {
						inChannel[e.Name] = true
					}
				}
				if !hasDefault {
					t.Errorf("package %s: default channel %q missing", p.Name, p.DefaultChannel)
				}
				versions := map[string]bool{}
				for _, b := range p.Bundles {
					if !inChannel[b.Name] {
						t.Errorf("bundle %s is in no channel", b.Name)
					}
					if len(b.RelatedImages) != tc.opts.Related || b.RelatedImages[0].Image != b.Image || b.RelatedImages[0].Name != "" {
						t.Errorf("bundle %s: related images %v", b.Name, b.RelatedImages)
					}
					for i, pr := range b.Properties {
						switch pr.Type {
						case fbc.PropertyPackage:
							if versions[string(pr.Value)] {
								t.Errorf("duplicate version %s", pr.Value)
							}
							versions[string(pr.Value)] = true
						case fbc.PropertyPackageRequired, fbc.PropertyGVKRequired:
							deps++
						case fbc.PropertyBundleObject:
							objects++
							if !b.Elided(i) {
								t.Errorf("bundle %s: object %d not elided", b.Name, i)
							}
						}
					}
				}
			}
			if tc.opts.ObjectKB > 0 && objects == 0 {
				t.Error("no olm.bundle.object properties generated")
			}
			if tc.name == "small" && (deps == 0 || channels <= tc.opts.Packages) {
				t.Errorf("small preset: %d dependencies and %d channels; want some dependencies and several channels per package", deps, channels)
			}
		})
	}
}

func TestGenerateDeterministic(t *testing.T) {
	ctx := context.Background()
	opts := Options{Packages: 3, BundlesPerPackage: 6, Related: 3, ObjectKB: 2, Seed: 9}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if err := Generate(ctx, opts, a); err != nil {
		t.Fatal(err)
	}
	if err := Generate(ctx, opts, b); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != opts.Packages {
		t.Fatalf("%d files, want %d", n, opts.Packages)
	}
	// A different seed changes the payloads.
	c := filepath.Join(t.TempDir(), "c")
	opts.Seed = 10
	if err := Generate(ctx, opts, c); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(filepath.Join(a, PackageName(0), "catalog.json"))
	y, _ := os.ReadFile(filepath.Join(c, PackageName(0), "catalog.json"))
	if bytes.Equal(x, y) {
		t.Error("seed does not change the output")
	}
}

func TestGenerateRejects(t *testing.T) {
	ctx := context.Background()
	for _, o := range []Options{{}, {Packages: 1, BundlesPerPackage: 1}, {Packages: 1, BundlesPerPackage: 1, Related: 1, ObjectKB: -1}} {
		if err := Generate(ctx, o, t.TempDir()); err == nil {
			t.Errorf("Generate(%+v) accepted invalid options", o)
		}
	}
	if _, err := Preset("huge"); err == nil {
		t.Error("unknown preset accepted")
	}
}
