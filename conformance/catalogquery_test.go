package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/pkg/api"
	health "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/prune"
)

// airlockView is what airlock says the rebuilt catalog holds: the explanation of
// the filter (packages, channels and their entries, kept bundles) and airlock's
// reading of the served folder (bundle contents, heads by fbc.Graph).
type airlockView struct {
	packages []string
	expl     map[string]*prune.PackageExplanation
	heads    map[[2]string]string             // (package, channel) → head
	facts    map[[3]string]bundleFacts        // (package, channel, bundle) → facts
	channels map[string][]string              // package → sorted channel names
	entries  map[[2]string][]fbc.ChannelEntry // (package, channel) → entries
}

func newAirlockView(t testing.TB, r *mirrorRun, ex *exportedCatalog) *airlockView {
	t.Helper()
	v := &airlockView{
		expl: map[string]*prune.PackageExplanation{}, heads: map[[2]string]string{},
		facts: map[[3]string]bundleFacts{}, channels: map[string][]string{}, entries: map[[2]string][]fbc.ChannelEntry{},
	}
	for i := range r.explanation.Packages {
		p := &r.explanation.Packages[i]
		v.packages = append(v.packages, p.Name)
		v.expl[p.Name] = p
	}
	sort.Strings(v.packages)
	var served []string
	for _, p := range ex.model.Packages {
		served = append(served, p.Name)
		ep := v.expl[p.Name]
		if ep == nil {
			t.Errorf("the rebuilt catalog holds package %s, which the explanation does not list", p.Name)
			continue
		}
		if p.DefaultChannel != ep.DefaultChannel {
			t.Errorf("package %s: the rebuilt catalog's default channel is %s, the explanation says %s", p.Name, p.DefaultChannel, ep.DefaultChannel)
		}
		bundles := map[string]*fbc.Bundle{}
		for _, b := range p.Bundles {
			bundles[b.Name] = b
			if eb := ep.Bundle(b.Name); eb == nil || len(eb.Reasons) == 0 {
				t.Errorf("package %s: bundle %s is in the rebuilt catalog without a reason in the explanation", p.Name, b.Name)
			}
		}
		if len(bundles) != len(ep.Bundles) {
			t.Errorf("package %s: %d bundles in the rebuilt catalog, %d in the explanation", p.Name, len(bundles), len(ep.Bundles))
		}
		explCh := map[string][]string{}
		for _, c := range ep.Channels {
			explCh[c.Name] = c.Entries
		}
		for _, ch := range p.Channels {
			key := [2]string{p.Name, ch.Name}
			v.channels[p.Name] = append(v.channels[p.Name], ch.Name)
			v.entries[key] = ch.Entries
			var names []string
			for _, e := range ch.Entries {
				names = append(names, e.Name)
				b := bundles[e.Name]
				if b == nil {
					t.Fatalf("package %s channel %s: entry %s has no bundle", p.Name, ch.Name, e.Name)
				}
				v.facts[[3]string{p.Name, ch.Name, e.Name}] = factsOf(t, p.Name, ch.Name, e, b)
			}
			if want, ok := explCh[ch.Name]; !ok || !sameSet(names, want) {
				t.Errorf("package %s channel %s: entries %v in the rebuilt catalog, the explanation says %v", p.Name, ch.Name, names, want)
			}
			head, err := fbc.NewGraph(ch).Head()
			if err != nil {
				t.Errorf("package %s channel %s: %v", p.Name, ch.Name, err)
			}
			v.heads[key] = head
		}
		sort.Strings(v.channels[p.Name])
		if len(p.Channels) != len(ep.Channels) {
			t.Errorf("package %s: %d channels in the rebuilt catalog, %d in the explanation", p.Name, len(p.Channels), len(ep.Channels))
		}
	}
	sort.Strings(served)
	if !slices.Equal(served, v.packages) {
		t.Errorf("the rebuilt catalog holds packages %v, the explanation %v", served, v.packages)
	}
	return v
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// replacing returns the channel entries that replace or skip name, as OLM asks for
// them (one per edge; a skip equal to replaces counts once).
func (v *airlockView) replacing(name string) []entryKey {
	var out []entryKey
	for key, es := range v.entries {
		for _, e := range es {
			if e.Replaces == name {
				out = append(out, entryKey{key[0], key[1], e.Name, e.Replaces})
			}
			for _, s := range e.Skips {
				if s == name && s != e.Replaces {
					out = append(out, entryKey{key[0], key[1], e.Name, e.Replaces})
				}
			}
		}
	}
	sortEntries(out)
	return out
}

// latestProviding returns, for every channel whose head provides g, the head's
// entry and one entry per skipped bundle of the same channel.
func (v *airlockView) latestProviding(g gvk) []entryKey {
	var out []entryKey
	for key, head := range v.heads {
		f := v.facts[[3]string{key[0], key[1], head}]
		if !slices.Contains(f.gvks, g) {
			continue
		}
		out = append(out, entryKey{key[0], key[1], head, f.entry.Replaces})
		inChannel := map[string]bool{}
		for _, e := range v.entries[key] {
			inChannel[e.Name] = true
		}
		for _, s := range f.entry.Skips {
			if s != f.entry.Replaces && inChannel[s] {
				out = append(out, entryKey{key[0], key[1], head, s})
			}
		}
	}
	sortEntries(out)
	return out
}

// serveAndQuery serves the exported catalog with operator-registry and asks it what
// OLM asks, for every kept package, channel, bundle and provided API; each answer
// must match what airlock says it kept. It returns the number of queries and the
// images the served bundles name: their bundle paths and the related images of
// their CSVs (served by the registry, or in the served folder).
func serveAndQuery(t testing.TB, r *mirrorRun, ex *exportedCatalog) (int, []string) {
	v := newAirlockView(t, r, ex)
	s := serveCatalog(t, ex)
	ctx := context.Background()
	q := 0

	hr, err := s.health.Check(ctx, &health.HealthCheckRequest{})
	q++
	if err != nil || hr.Status != health.HealthCheckResponse_SERVING {
		t.Fatalf("health check (the pod's readiness probe): %v %v", hr, err)
	}

	st, err := s.client.ListPackages(ctx, &api.ListPackageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names, err := recv[*api.PackageName](st)
	q++
	if err != nil {
		t.Fatalf("ListPackages: %v", err)
	}
	var pkgs []string
	for _, n := range names {
		pkgs = append(pkgs, n.Name)
	}
	sort.Strings(pkgs)
	if !slices.Equal(pkgs, v.packages) {
		t.Errorf("ListPackages: %v, airlock kept %v", pkgs, v.packages)
	}

	gvks := map[gvk]bool{}
	for _, pkg := range v.packages {
		p, err := s.client.GetPackage(ctx, &api.GetPackageRequest{Name: pkg})
		q++
		if err != nil {
			t.Errorf("GetPackage %s: %v", pkg, err)
			continue
		}
		if p.DefaultChannelName != v.expl[pkg].DefaultChannel {
			t.Errorf("GetPackage %s: default channel %s, airlock says %s", pkg, p.DefaultChannelName, v.expl[pkg].DefaultChannel)
		}
		var chans []string
		for _, c := range p.Channels {
			chans = append(chans, c.Name)
			if want := v.heads[[2]string{pkg, c.Name}]; c.CsvName != want {
				t.Errorf("GetPackage %s: channel %s head %s, airlock says %s", pkg, c.Name, c.CsvName, want)
			}
		}
		sort.Strings(chans)
		if !slices.Equal(chans, v.channels[pkg]) {
			t.Errorf("GetPackage %s: channels %v, airlock kept %v", pkg, chans, v.channels[pkg])
		}

		for _, ch := range v.channels[pkg] {
			key := [2]string{pkg, ch}
			head := v.heads[key]
			//lint:ignore SA1019 deprecated in opm's API, still served by the registry server, and what older OLM clients call: the catalog must answer it.
			b, err := s.client.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: pkg, ChannelName: ch})
			q++
			if err != nil {
				t.Errorf("GetBundleForChannel %s/%s: %v", pkg, ch, err)
			} else {
				checkBundle(t, fmt.Sprintf("GetBundleForChannel %s/%s", pkg, ch), b, v.facts[[3]string{pkg, ch, head}], true)
			}
			for _, e := range v.entries[key] {
				f := v.facts[[3]string{pkg, ch, e.Name}]
				for _, g := range f.gvks {
					gvks[g] = true
				}
				// What upgrades from e inside this channel.
				want := map[string]bool{}
				for _, o := range v.entries[key] {
					if o.Replaces == e.Name || slices.Contains(o.Skips, e.Name) {
						want[o.Name] = true
					}
				}
				got, err := s.client.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{CsvName: e.Name, PkgName: pkg, ChannelName: ch})
				q++
				switch {
				case len(want) == 0 && err == nil:
					t.Errorf("GetBundleThatReplaces %s in %s/%s: %s, airlock has nothing replacing it", e.Name, pkg, ch, got.CsvName)
				case len(want) > 0 && err != nil:
					t.Errorf("GetBundleThatReplaces %s in %s/%s: %v, airlock has %v", e.Name, pkg, ch, err, keys(want))
				case len(want) > 0 && !want[got.CsvName]:
					t.Errorf("GetBundleThatReplaces %s in %s/%s: %s, airlock has %v", e.Name, pkg, ch, got.CsvName, keys(want))
				case err == nil:
					checkBundle(t, "GetBundleThatReplaces "+e.Name, got, v.facts[[3]string{pkg, ch, got.CsvName}], true)
				}
			}
		}
	}

	// Every kept bundle: which channel entries replace it, across the catalog.
	seen := map[string]bool{}
	for key := range v.facts {
		name := key[2]
		if seen[name] {
			continue
		}
		seen[name] = true
		q++
		if err := compareEntries("GetChannelEntriesThatReplace "+name, v.replacing(name), func() (streamOf, error) {
			return s.client.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: name})
		}); err != nil {
			t.Error(err)
		}
	}
	// Every provided API: the latest providers.
	for g := range gvks {
		q++
		if err := compareEntries(fmt.Sprintf("GetLatestChannelEntriesThatProvide %s/%s %s", g.group, g.version, g.kind), v.latestProviding(g), func() (streamOf, error) {
			return s.client.GetLatestChannelEntriesThatProvide(ctx, &api.GetLatestProvidersRequest{Group: g.group, Version: g.version, Kind: g.kind})
		}); err != nil {
			t.Error(err)
		}
	}
	if len(gvks) == 0 && r.sc.name != "heads-only" {
		t.Errorf("no bundle provides an API: GetLatestChannelEntriesThatProvide was not exercised")
	}
	images := servedImages(t, s, v)
	q++
	t.Logf("%s: %d packages, %d channels, %d channel entries, %d APIs; %d queries; %d images named", r.sc.name, len(v.packages), len(v.heads), len(v.facts), len(gvks), q, len(images))
	return q, images
}

// servedImages lists every bundle the registry serves (ListBundles, as OLM's
// package server does), checks it is one airlock kept, and returns the images
// they name.
func servedImages(t testing.TB, s *servedCatalog, v *airlockView) []string {
	ctx := context.Background()
	st, err := s.client.ListBundles(ctx, &api.ListBundlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	bundles, err := recv[*api.Bundle](st)
	if err != nil {
		t.Fatalf("ListBundles: %v", err)
	}
	set := map[string]bool{}
	seen := map[[3]string]bool{}
	for _, b := range bundles {
		key := [3]string{b.PackageName, b.ChannelName, b.CsvName}
		f, ok := v.facts[key]
		if !ok {
			t.Errorf("ListBundles: %v, which airlock did not keep", key)
			continue
		}
		seen[key] = true
		checkBundle(t, fmt.Sprintf("ListBundles %v", key), b, f, false)
		set[b.BundlePath] = true
		for _, ri := range f.bundle.RelatedImages {
			if ri.Image != "" {
				set[ri.Image] = true
			}
		}
		if len(propsOf(f.bundle, fbc.PropertyBundleObject)) > 0 || b.CsvJson == "" {
			// A CSV from the bundle's own objects names the images of the original
			// catalog (the seed rewrites the catalog, not the manifests inside it);
			// its related images are the catalog's, counted above.
			continue
		}
		var csv struct {
			Spec struct {
				RelatedImages []struct{ Image string } `json:"relatedImages"`
			} `json:"spec"`
		}
		if err := json.Unmarshal([]byte(b.CsvJson), &csv); err != nil {
			t.Errorf("ListBundles %v: csvJson: %v", key, err)
		}
		for _, ri := range csv.Spec.RelatedImages {
			if ri.Image != "" && !set[ri.Image] {
				t.Errorf("ListBundles %v: the served CSV names %s, not among the bundle's related images", key, ri.Image)
			}
		}
	}
	if len(seen) != len(v.facts) {
		t.Errorf("ListBundles: %d bundles, airlock kept %d channel entries", len(seen), len(v.facts))
	}
	var out []string
	for im := range set {
		out = append(out, im)
	}
	sort.Strings(out)
	return out
}

type streamOf interface {
	Recv() (*api.ChannelEntry, error)
}

// compareEntries drains a stream of channel entries and compares it with want; an
// empty want expects the registry's "not found" error.
func compareEntries(what string, want []entryKey, call func() (streamOf, error)) error {
	st, err := call()
	var got []*api.ChannelEntry
	if err == nil {
		got, err = recv[*api.ChannelEntry](st)
	}
	if len(want) == 0 {
		if err == nil && len(got) > 0 {
			return fmt.Errorf("%s: %v, airlock has none", what, entryKeys(got))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %v, airlock has %v", what, err, want)
	}
	if g := entryKeys(got); fmt.Sprint(g) != fmt.Sprint(want) {
		return fmt.Errorf("%s:\n  served  %v\n  airlock %v", what, g, want)
	}
	return nil
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
