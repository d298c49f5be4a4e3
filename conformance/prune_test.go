package conformance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/prune"
)

// filterConfig is one operator entry of the table, built for a given catalog.
type filterConfig struct {
	name string
	op   imageset.Operator
}

// chainVersions returns the versions of the default channel's replaces chain of p,
// oldest first (only bundles with a valid version).
func chainVersions(p *fbc.Package) (*fbc.Channel, []string) {
	var def *fbc.Channel
	for _, ch := range p.Channels {
		if ch.Name == p.DefaultChannel {
			def = ch
		}
	}
	if def == nil {
		return nil, nil
	}
	g := fbc.NewGraph(def)
	h, err := g.Head()
	if err != nil {
		return def, nil
	}
	chain, _ := g.ReplacesChain(h)
	byName := map[string]*fbc.Bundle{}
	for _, b := range p.Bundles {
		byName[b.Name] = b
	}
	var vs []string
	for i := len(chain) - 1; i >= 0; i-- {
		if b := byName[chain[i]]; b != nil {
			if v, err := fbc.BundleVersion(b); err == nil {
				vs = append(vs, v.String())
			}
		}
	}
	return def, vs
}

// filterConfigs builds the table for catalog c: heads only, full, some packages,
// channel lists, ranges at package and channel level and selected bundles, each
// with dependencies resolved and skipped.
func filterConfigs(c *fbc.Catalog) []filterConfig {
	var base []filterConfig
	base = append(base, filterConfig{"heads-only", imageset.Operator{}})
	base = append(base, filterConfig{"full", imageset.Operator{Full: true}})
	var names []string
	for _, p := range c.Packages {
		if p.Declared > 0 {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		some := []imageset.IncludePackage{{Name: names[0]}}
		if len(names) > 2 {
			some = append(some, imageset.IncludePackage{Name: names[len(names)/2]})
		}
		base = append(base, filterConfig{"some-packages", imageset.Operator{Packages: some}})
		base = append(base, filterConfig{"some-packages-full", imageset.Operator{Full: true, Packages: some}})
	}
	var chans, pkgRanges, chanRanges, maxOnly, selected []imageset.IncludePackage
	for _, p := range c.Packages {
		if p.Declared == 0 {
			continue
		}
		var ic []imageset.IncludeChannel
		for _, ch := range p.Channels {
			if ch.Name != p.DefaultChannel {
				ic = append(ic, imageset.IncludeChannel{Name: ch.Name})
			}
		}
		if len(ic) > 0 && len(chans) < 4 {
			chans = append(chans, imageset.IncludePackage{Name: p.Name, DefaultChannel: ic[0].Name, Channels: ic[:1]})
		}
		def, vs := chainVersions(p)
		if def == nil || len(vs) < 2 {
			continue
		}
		lo, hi := vs[len(vs)/3], vs[(2*len(vs))/3]
		if len(pkgRanges) < 4 {
			pkgRanges = append(pkgRanges, imageset.IncludePackage{Name: p.Name, IncludeBundle: imageset.IncludeBundle{MinVersion: lo}})
			chanRanges = append(chanRanges, imageset.IncludePackage{Name: p.Name, Channels: []imageset.IncludeChannel{{Name: def.Name, IncludeBundle: imageset.IncludeBundle{MinVersion: lo, MaxVersion: hi}}}})
			maxOnly = append(maxOnly, imageset.IncludePackage{Name: p.Name, IncludeBundle: imageset.IncludeBundle{MaxVersion: hi}})
			g := fbc.NewGraph(def)
			if h, err := g.Head(); err == nil {
				if chain, _ := g.ReplacesChain(h); len(chain) > 1 {
					selected = append(selected, imageset.IncludePackage{Name: p.Name, SelectedBundles: []imageset.SelectedBundle{{Name: chain[len(chain)/2]}}})
				}
			}
		}
	}
	add := func(name string, ps []imageset.IncludePackage) {
		if len(ps) > 0 {
			base = append(base, filterConfig{name, imageset.Operator{Packages: ps}})
		}
	}
	add("channel-lists", chans)
	add("package-min-version", pkgRanges)
	add("channel-range", chanRanges)
	add("package-max-version", maxOnly)
	add("selected-bundles", selected)
	var out []filterConfig
	for _, fc := range base {
		out = append(out, fc)
		if !fc.op.Full || len(fc.op.Packages) > 0 {
			skip := fc
			skip.name += "/skip-dependencies"
			skip.op.SkipDependencies = true
			out = append(out, skip)
		}
	}
	return out
}

// TestFilterOutputValid filters every valid catalog with every configuration of
// the table, writes the result with fbc.Write and has opm validate it. It also
// checks that opm loads the written catalog to the same documents airlock's model
// holds.
func TestFilterOutputValid(t *testing.T) {
	ctx := context.Background()
	var filtered, refused int
	for _, src := range allSources(t) {
		if src.Kind == "invalid" {
			continue
		}
		t.Run(src.Name, func(t *testing.T) {
			c, err := fbc.LoadDir(ctx, src.Dir, fbc.LoadOptions{ElideHeavy: true})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if validate.Catalog(c) != nil {
				t.Skip("not a valid catalog")
			}
			for i, fc := range filterConfigs(c) {
				out, _, err := prune.Filter(c, fc.op, prune.FilterOptions{})
				if err != nil {
					if !errors.Is(err, prune.ErrFilter) {
						t.Errorf("%s: error does not wrap ErrFilter: %v", fc.name, err)
					}
					refused++
					t.Logf("%s: filter refuses: %v", fc.name, err)
					continue
				}
				filtered++
				dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
				if err := fbc.Write(ctx, out, dir, fbc.WriteOptions{}); err != nil {
					t.Errorf("%s: write: %v", fc.name, err)
					continue
				}
				if err := opmValidate(ctx, dir); err != nil {
					t.Errorf("%s: opm validate refuses the filtered catalog: %v", fc.name, err)
					continue
				}
				cfg, err := opmLoad(ctx, dir)
				if err != nil {
					t.Errorf("%s: opm load: %v", fc.name, err)
					continue
				}
				ours, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{})
				if err != nil {
					t.Errorf("%s: airlock cannot load what it wrote: %v", fc.name, err)
					continue
				}
				if d := canonOpm(cfg).diff(canonOurs(ours), 10); d != "" {
					t.Errorf("%s: written filtered catalog, opm vs airlock:\n%s", fc.name, d)
				}
			}
		})
	}
	t.Logf("filter: %d filtered catalogs validated by opm, %d configurations refused by Filter", filtered, refused)
	if filtered == 0 {
		t.Fatal("nothing was filtered")
	}
}
