package fbc_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/internal/gen/catalog/gen"
)

// benchCatalog returns the root of a generated catalog for a preset, generated
// once into a cache directory under the system temp dir (reused across runs:
// the generator is deterministic).
func benchCatalog(b *testing.B, preset string) string {
	b.Helper()
	opts, err := gen.Preset(preset)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("airlock-bench-%s-%d-%d-%d-%d-%d-%d", preset,
		opts.Packages, opts.BundlesPerPackage, opts.Related, opts.ObjectKB, opts.Objects, opts.Seed))
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err == nil {
		return filepath.Join(dir, "catalog")
	}
	if testing.Short() && preset == "large" {
		b.Skip("large generated catalog skipped in -short mode")
	}
	os.RemoveAll(dir)
	if err := gen.Generate(context.Background(), opts, filepath.Join(dir, "catalog")); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, "catalog")
}

// catalogRoots are the benchmark inputs: the generator presets and, when
// AIRLOCK_LARGE_CATALOG names an unpacked catalog root, the real-scale catalog.
func catalogRoots(b *testing.B) []struct{ name, dir string } {
	roots := []struct{ name, dir string }{
		{"gen-small", benchCatalog(b, "small")},
		{"gen-large", benchCatalog(b, "large")},
	}
	if d := os.Getenv("AIRLOCK_LARGE_CATALOG"); d != "" {
		roots = append(roots, struct{ name, dir string }{"real-scale", d})
	}
	return roots
}

func treeSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkLoad loads a catalog with heavy values elided (what the CLI does).
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	for _, r := range catalogRoots(b) {
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(treeSize(b, r.dir))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := fbc.LoadDir(ctx, r.dir, fbc.LoadOptions{ElideHeavy: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadFull loads the small generated catalog keeping every value.
func BenchmarkLoadFull(b *testing.B) {
	ctx := context.Background()
	dir := benchCatalog(b, "small")
	b.SetBytes(treeSize(b, dir))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender is `airlock catalog render DIR > /dev/null`: load with heavy
// values elided, then write everything back, restoring them from the source.
func BenchmarkRender(b *testing.B) {
	ctx := context.Background()
	for _, r := range catalogRoots(b) {
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(treeSize(b, r.dir))
			b.ReportAllocs()
			for b.Loop() {
				if err := fbc.RenderDir(ctx, r.dir, io.Discard, "json", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadValidateWriteHeads loads, validates, keeps only the channel heads
// (a stand-in for Filter's heads-only selection) and writes the result.
func BenchmarkLoadValidateWriteHeads(b *testing.B) {
	ctx := context.Background()
	for _, r := range catalogRoots(b) {
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(treeSize(b, r.dir))
			b.ReportAllocs()
			for b.Loop() {
				c, err := fbc.LoadDir(ctx, r.dir, fbc.LoadOptions{ElideHeavy: true})
				if err != nil {
					b.Fatal(err)
				}
				if err := validate.Catalog(c); err != nil {
					b.Fatal(err)
				}
				heads := headsOnly(b, c)
				if err := fbc.Write(ctx, heads, filepath.Join(b.TempDir(), "out"), fbc.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func headsOnly(b *testing.B, c *fbc.Catalog) *fbc.Catalog {
	out := &fbc.Catalog{Others: c.Others}
	for _, p := range c.Packages {
		np := *p
		np.Channels, np.Bundles, np.Deprecations = nil, nil, nil
		keep := map[string]bool{}
		for _, ch := range p.Channels {
			head, err := fbc.NewGraph(ch).Head()
			if err != nil {
				b.Fatal(err)
			}
			nc := *ch
			nc.Entries = nil
			for _, e := range ch.Entries {
				if e.Name == head {
					nc.Entries = append(nc.Entries, e)
				}
			}
			keep[head] = true
			np.Channels = append(np.Channels, &nc)
		}
		for _, bd := range p.Bundles {
			if keep[bd.Name] {
				np.Bundles = append(np.Bundles, bd)
			}
		}
		out.Packages = append(out.Packages, &np)
	}
	return out
}
