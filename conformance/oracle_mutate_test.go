package conformance

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/prune"
)

// Helpers of the mutation test (oracle_mutants_test.go): each broken variant of
// the product filter is prune.Filter run on an input changed so that the change
// has exactly the effect of the bug (a configuration or catalog transform), or
// prune.Filter's output changed as the broken filter would have built it and then
// checked with validate.Catalog, as Filter checks its own output.

// productOutput runs the product as productSelect does and returns the catalog.
func productOutput(c *fbc.Catalog, op imageset.Operator) (*fbc.Catalog, *oRefusal) {
	if r := validateConfig(op); r != nil {
		return nil, r
	}
	op.Catalog = oracleCatalogRef
	out, _, err := prune.Filter(c, op, prune.FilterOptions{})
	if err != nil {
		return nil, &oRefusal{class: productClass(err), msg: err.Error()}
	}
	return out, nil
}

// keepSets is what a broken filter keeps: package → channel → entries.
type keepSets map[string]map[string]map[string]bool

func keepSetsOf(out *fbc.Catalog) keepSets {
	ks := keepSets{}
	for _, p := range out.Packages {
		ks[p.Name] = map[string]map[string]bool{}
		for _, ch := range p.Channels {
			ks[p.Name][ch.Name] = map[string]bool{}
			for _, e := range ch.Entries {
				ks[p.Name][ch.Name][e.Name] = true
			}
		}
	}
	return ks
}

// rebuild builds the catalog a broken filter would return: the packages of out
// (default channel, properties) with the entries of ks taken from the source
// catalog src, the bundles that are entries of a kept channel, deprecations of
// removed bundles dropped; then validates it as Filter does, refusing with
// class invalid-output when it is not valid.
func rebuild(src, out *fbc.Catalog, ks keepSets) (*oResult, *oRefusal) {
	srcPkgs := map[string]*fbc.Package{}
	for _, p := range src.Packages {
		srcPkgs[p.Name] = p
	}
	nc := &fbc.Catalog{Others: out.Others}
	for _, op := range out.Packages {
		sp := srcPkgs[op.Name]
		np := *op
		np.Channels, np.Bundles, np.Deprecations = nil, nil, nil
		inChannel := map[string]bool{}
		for _, ch := range sp.Channels {
			keep := ks[op.Name][ch.Name]
			if len(keep) == 0 {
				continue
			}
			nch := *ch
			nch.Entries = nil
			for _, e := range ch.Entries {
				if keep[e.Name] {
					nch.Entries = append(nch.Entries, e)
					inChannel[e.Name] = true
				}
			}
			np.Channels = append(np.Channels, &nch)
		}
		for _, b := range sp.Bundles {
			if inChannel[b.Name] {
				np.Bundles = append(np.Bundles, b)
			}
		}
		for _, d := range op.Deprecations {
			nd := *d
			nd.Entries = slices.DeleteFunc(slices.Clone(d.Entries), func(e fbc.DeprecationEntry) bool {
				return e.Reference.Schema == "olm.bundle" && !inChannel[e.Reference.Name]
			})
			if len(nd.Entries) > 0 {
				np.Deprecations = append(np.Deprecations, &nd)
			}
		}
		nc.Packages = append(nc.Packages, &np)
	}
	if err := validate.Catalog(nc); err != nil {
		return nil, &oRefusal{class: "invalid-output", msg: err.Error()}
	}
	return resultOf(nc), nil
}

// withProperties returns a copy of c in which every bundle's properties went
// through edit (the source catalog is not changed). edit may change properties
// but not add or remove any.
func withProperties(c *fbc.Catalog, edit func(pkg string, b *fbc.Bundle, props []fbc.Property) []fbc.Property) *fbc.Catalog {
	nc := &fbc.Catalog{Others: c.Others}
	for _, p := range c.Packages {
		np := *p
		np.Bundles = make([]*fbc.Bundle, len(p.Bundles))
		for i, b := range p.Bundles {
			nb := *b
			nb.Properties = edit(p.Name, b, slices.Clone(b.Properties))
			np.Bundles[i] = &nb
		}
		nc.Packages = append(nc.Packages, &np)
	}
	return nc
}

// ranges lists, per package of op, the version ranges the configuration sets
// (package level or channel level), parsed as the configuration validator does.
func ranges(op imageset.Operator) map[string][]oRange {
	out := map[string][]oRange{}
	for _, ip := range op.Packages {
		for _, ib := range append([]imageset.IncludeBundle{ip.IncludeBundle}, channelBundles(ip)...) {
			if r, err := parseRange(ib); err == nil && r.set() {
				out[ip.Name] = append(out[ip.Name], r)
			}
		}
	}
	return out
}

func channelBundles(ip imageset.IncludePackage) []imageset.IncludeBundle {
	var out []imageset.IncludeBundle
	for _, ic := range ip.Channels {
		out = append(out, ic.IncludeBundle)
	}
	return out
}

// versionsOf are the versions of the bundles of package p, sorted.
func versionsOf(p *oPkg) []semver.Version {
	var vs []semver.Version
	for _, b := range p.bundles {
		if b.verOK {
			vs = append(vs, b.version)
		}
	}
	slices.SortFunc(vs, func(a, b semver.Version) int { return a.Compare(b) })
	return vs
}

// emptyRange is a range no bundle of a catalog is in (minVersion equal to
// maxVersion, a version no catalog uses).
var emptyRange = imageset.IncludeBundle{MinVersion: "999999.999999.999999-oracle.empty", MaxVersion: "999999.999999.999999-oracle.empty"}

// exclusiveBound rewrites one bound of ib so that the inclusive range over the
// versions vs is what the exclusive bound selects: maxVersion becomes the
// greatest version below it (minVersion the least above it). ok is false when
// the rewritten range would not be an exact model (it would turn into
// minVersion == maxVersion, which Filter treats on its own).
func exclusiveBound(ib imageset.IncludeBundle, vs []semver.Version, upper bool) (imageset.IncludeBundle, bool) {
	r, err := parseRange(ib)
	if err != nil || (upper && !r.hasMax) || (!upper && !r.hasMin) {
		return ib, true
	}
	var nb *semver.Version
	for i := range vs {
		if upper && vs[i].Compare(r.max) < 0 {
			nb = &vs[i]
		}
		if !upper && vs[len(vs)-1-i].Compare(r.min) > 0 {
			nb = &vs[len(vs)-1-i]
		}
	}
	empty := nb == nil || (upper && r.hasMin && nb.Compare(r.min) < 0) || (!upper && r.hasMax && nb.Compare(r.max) > 0)
	switch {
	case r.exact() || empty:
		return emptyRange, true
	case upper:
		ib.MaxVersion = nb.String()
	default:
		ib.MinVersion = nb.String()
	}
	if r2, _ := parseRange(ib); r2.exact() {
		return ib, false
	}
	return ib, true
}

// rangedChannels calls f for every channel of the result whose selection is a
// version range other than minVersion == maxVersion, with that range.
func rangedChannels(src *oCatalog, op imageset.Operator, f func(p *oPkg, ch *oChan, r oRange)) {
	for _, ip := range op.Packages {
		p := src.pkgs[ip.Name]
		if p == nil {
			continue
		}
		pr, _ := parseRange(ip.IncludeBundle)
		chans := map[string]oRange{}
		if len(ip.Channels) == 0 {
			for _, cn := range p.chanNames {
				chans[cn] = pr
			}
		}
		for _, ic := range ip.Channels {
			cr, _ := parseRange(ic.IncludeBundle)
			if !cr.set() {
				cr = pr
			}
			chans[ic.Name] = cr
		}
		for cn, r := range chans {
			if r.set() && !r.exact() && p.chans[cn] != nil {
				f(p, p.chans[cn], r)
			}
		}
	}
}

// headOnlyChannels calls f for every channel op selects without range, full or
// bundles (so the product keeps its head).
func headOnlyChannels(src *oCatalog, op imageset.Operator, f func(p *oPkg, ch *oChan)) {
	if op.Full {
		return
	}
	pkgs := op.Packages
	if len(pkgs) == 0 {
		for _, n := range src.names {
			pkgs = append(pkgs, imageset.IncludePackage{Name: n})
		}
	}
	for _, ip := range pkgs {
		p := src.pkgs[ip.Name]
		if p == nil || ip.HasRange() || len(ip.SelectedBundles) > 0 {
			continue
		}
		chans := p.chanNames
		if len(ip.Channels) > 0 {
			chans = nil
			for _, ic := range ip.Channels {
				chans = append(chans, ic.Name)
			}
		}
		for _, cn := range chans {
			if p.chans[cn] != nil {
				f(p, p.chans[cn])
			}
		}
	}
}

// editRequirements rewrites the properties of type typ: edit returns the new
// value, or false to remove the property (its type is changed to one nothing
// reads, so that the indexes of the bundle's properties stay what the loader
// recorded for its elided values).
func editRequirements(c *fbc.Catalog, typ string, edit func(v json.RawMessage) (json.RawMessage, bool)) *fbc.Catalog {
	return withProperties(c, func(_ string, _ *fbc.Bundle, props []fbc.Property) []fbc.Property {
		for i, p := range props {
			if p.Type == typ {
				if v, keep := edit(p.Value); keep {
					props[i].Value = v
				} else {
					props[i].Type = "conformance.oracle.removed"
				}
			}
		}
		return props
	})
}

// firstAlternative keeps the first alternative of a versionRange with "||".
func firstAlternative(v json.RawMessage) (json.RawMessage, bool) {
	var r map[string]any
	if json.Unmarshal(v, &r) != nil {
		return v, true
	}
	s, _ := r["versionRange"].(string)
	if i := strings.Index(s, "||"); i >= 0 {
		r["versionRange"] = strings.TrimSpace(s[:i])
		b, _ := json.Marshal(r)
		return b, true
	}
	return v, true
}
