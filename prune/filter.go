package prune

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/imageset"
)

// FilterOptions tunes Filter.
type FilterOptions struct {
	// Logger receives debug messages; nil discards them.
	Logger *slog.Logger
	// Complete, when set, is given every bundle of the result before it is
	// validated and returns the bundle to keep in its place: a caller that
	// filtered light bundles (read without what filtering does not need)
	// completes the few it keeps. The source catalog is not changed.
	Complete func(*fbc.Bundle) (*fbc.Bundle, error)
}

// ErrFilter is wrapped by every error Filter returns because of what the
// configuration asks for (as opposed to an invalid source catalog).
var ErrFilter = errors.New("catalog filter")

// Filter returns a new catalog holding what the operator entry op asks for, with
// the semantics of oc-mirror v2 (see docs/catalog-prune.md):
//
//   - no packages: the head of every channel of every package; with full, the
//     whole catalog unchanged;
//   - packages: only those; channels: only those (else every channel of the package);
//   - a channel without a range keeps its head (every entry with full);
//   - minVersion/maxVersion (package or channel level) keep a contiguous part of
//     the channel's replaces chain, plus what the channel needs to keep one head;
//   - bundles (selected bundles) keep those bundles and their path to the channel head;
//   - dependencies (olm.package.required, olm.gvk.required) are added unless
//     op.SkipDependencies is set.
//
// Upgrade edges are kept verbatim. Bundles, icons, properties and custom blobs are
// shared with c, which is not modified. The result always passes Validate.
func Filter(c *fbc.Catalog, op imageset.Operator, opts FilterOptions) (*fbc.Catalog, *Explanation, error) {
	if c == nil {
		return nil, nil, fmt.Errorf("%w: no catalog to filter", ErrFilter)
	}
	f := &filterer{
		src:    c,
		op:     op,
		log:    opts.Logger,
		fill:   opts.Complete,
		index:  make(map[string]*pkgIndex, len(c.Packages)),
		sel:    make(map[string]*pkgSel),
		byName: make(map[string]*fbc.Package, len(c.Packages)),
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	for _, p := range c.Packages {
		if _, dup := f.byName[p.Name]; !dup {
			f.byName[p.Name] = p
		}
	}
	if err := f.checkConfig(); err != nil {
		return nil, nil, err
	}

	if len(op.Packages) == 0 && op.Full {
		return f.whole()
	}

	if len(op.Packages) == 0 {
		for _, p := range c.Packages {
			if err := f.selectPackage(imageset.IncludePackage{Name: p.Name}); err != nil {
				return nil, nil, err
			}
		}
	} else {
		var missing []string
		for _, ip := range op.Packages {
			if _, ok := f.byName[ip.Name]; !ok {
				missing = append(missing, ip.Name)
			}
		}
		if len(missing) > 0 {
			return nil, nil, f.missingPackages(missing)
		}
		for _, ip := range op.Packages {
			if err := f.selectPackage(ip); err != nil {
				return nil, nil, err
			}
		}
	}

	if !op.SkipDependencies {
		if err := f.resolveDependencies(); err != nil {
			return nil, nil, err
		}
	}

	out, err := f.build()
	if err != nil {
		return nil, nil, err
	}
	if err := f.complete(out); err != nil {
		return nil, nil, err
	}
	expl := f.explain(out)
	if err := validate.Catalog(out); err != nil {
		return nil, nil, fmt.Errorf("%w: the filtered catalog is not valid, which is a bug in airlock or an invalid source catalog (check it with airlock catalog validate): %w", ErrFilter, err)
	}
	return out, expl, nil
}

// filterer holds the state of one Filter call.
type filterer struct {
	src    *fbc.Catalog
	op     imageset.Operator
	log    *slog.Logger
	fill   func(*fbc.Bundle) (*fbc.Bundle, error)
	byName map[string]*fbc.Package
	index  map[string]*pkgIndex
	sel    map[string]*pkgSel
	// order lists selected packages in the order they were selected.
	order    []string
	warnings []string
	// providers maps an olm.gvk to the bundles that provide it (built lazily).
	providers map[gvkKey][]bundleRef
}

// pkgSel is what is kept of one package.
type pkgSel struct {
	idx            *pkgIndex
	defaultChannel string
	dependency     bool
	channels       map[string]*chanSel
	reasons        map[string][]Reason
	dropped        []DroppedChannel
}

// chanSel is what is kept of one channel.
type chanSel struct {
	ci   *chanIndex
	keep map[string]bool
}

func (f *filterer) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrFilter}, args...)...)
}

// checkConfig rejects combinations of the operator entry that have no meaning.
func (f *filterer) checkConfig() error {
	seen := map[string]bool{}
	for _, ip := range f.op.Packages {
		if ip.Name == "" {
			return f.errorf("catalog %s: a packages[] entry has no name", f.op.Catalog)
		}
		if seen[ip.Name] {
			return f.errorf("package %q is listed twice under catalog %s: merge the two entries", ip.Name, f.op.Catalog)
		}
		seen[ip.Name] = true
		pkgRange := ip.MinVersion != "" || ip.MaxVersion != ""
		chRange := false
		chSeen := map[string]bool{}
		for _, ic := range ip.Channels {
			if ic.Name == "" {
				return f.errorf("package %q: a channels[] entry has no name", ip.Name)
			}
			if chSeen[ic.Name] {
				return f.errorf("package %q: channel %q is listed twice: merge the two entries", ip.Name, ic.Name)
			}
			chSeen[ic.Name] = true
			if ic.MinVersion != "" || ic.MaxVersion != "" {
				chRange = true
			}
		}
		switch {
		case pkgRange && chRange:
			return f.errorf("package %q: minVersion/maxVersion are set both on the package and on its channels: set them at one level only", ip.Name)
		case f.op.Full && (pkgRange || chRange):
			return f.errorf("package %q: full: true cannot be combined with minVersion/maxVersion: remove one of them", ip.Name)
		case f.op.Full && len(ip.SelectedBundles) > 0:
			return f.errorf("package %q: full: true cannot be combined with bundles: remove one of them", ip.Name)
		case len(ip.SelectedBundles) > 0 && (pkgRange || chRange):
			return f.errorf("package %q: bundles cannot be combined with minVersion/maxVersion: remove one of them", ip.Name)
		}
	}
	return nil
}

// whole keeps the catalog as is (full: true without packages).
func (f *filterer) whole() (*fbc.Catalog, *Explanation, error) {
	out := &fbc.Catalog{Packages: slices.Clone(f.src.Packages), Others: slices.Clone(f.src.Others)}
	for _, p := range f.src.Packages {
		ps := f.selFor(p.Name, false)
		ps.defaultChannel = p.DefaultChannel
		for _, ch := range p.Channels {
			cs := ps.chanSel(f.chanIndex(p.Name, ch.Name))
			for _, e := range ch.Entries {
				cs.keep[e.Name] = true
				ps.addReason(e.Name, Reason{Kind: ReasonRequested, Channel: ch.Name, Detail: "full catalog"})
			}
		}
	}
	if err := f.complete(out); err != nil {
		return nil, nil, err
	}
	expl := f.explain(out)
	if err := validate.Catalog(out); err != nil {
		return nil, nil, fmt.Errorf("%w: the source catalog is not valid (full: true keeps it unchanged): %w", ErrFilter, err)
	}
	return out, expl, nil
}

// complete replaces the bundles of out by what FilterOptions.Complete makes of
// them, in copies of out's packages (whole shares them with the source).
func (f *filterer) complete(out *fbc.Catalog) error {
	if f.fill == nil {
		return nil
	}
	for i, p := range out.Packages {
		np := *p
		np.Bundles = make([]*fbc.Bundle, len(p.Bundles))
		for j, b := range p.Bundles {
			nb, err := f.fill(b)
			if err != nil {
				return err
			}
			np.Bundles[j] = nb
		}
		out.Packages[i] = &np
	}
	return nil
}

func (f *filterer) selFor(name string, dependency bool) *pkgSel {
	if ps, ok := f.sel[name]; ok {
		return ps
	}
	pi := f.pkgIndex(name)
	ps := &pkgSel{
		idx:            pi,
		defaultChannel: pi.p.DefaultChannel,
		dependency:     dependency,
		channels:       map[string]*chanSel{},
		reasons:        map[string][]Reason{},
	}
	f.sel[name] = ps
	f.order = append(f.order, name)
	return ps
}

func (ps *pkgSel) chanSel(ci *chanIndex) *chanSel {
	if cs, ok := ps.channels[ci.ch.Name]; ok {
		return cs
	}
	cs := &chanSel{ci: ci, keep: map[string]bool{}}
	ps.channels[ci.ch.Name] = cs
	return cs
}

func (ps *pkgSel) addReason(bundle string, r Reason) {
	for _, have := range ps.reasons[bundle] {
		if have == r {
			return
		}
	}
	ps.reasons[bundle] = append(ps.reasons[bundle], r)
}

// kept reports whether bundle is kept in some channel of the package.
func (ps *pkgSel) kept(bundle string) bool {
	for _, cs := range ps.channels {
		if cs.keep[bundle] {
			return true
		}
	}
	return false
}

func (ps *pkgSel) addContinuity(bundle, head, channel string) {
	detail := "on the upgrade path to the channel head " + head
	if bundle == head {
		ps.addReason(bundle, Reason{Kind: ReasonHead, Channel: channel})
		return
	}
	ps.addReason(bundle, Reason{Kind: ReasonContinuity, Channel: channel, Detail: detail})
}

// build assembles the output catalog from the selection.
func (f *filterer) build() (*fbc.Catalog, error) {
	out := &fbc.Catalog{Others: slices.Clone(f.src.Others)}
	for _, p := range f.src.Packages {
		ps := f.sel[p.Name]
		if ps == nil || ps.idx.p != p {
			continue
		}
		np := &fbc.Package{
			Name:           p.Name,
			DefaultChannel: ps.defaultChannel,
			Icon:           p.Icon,
			Description:    p.Description,
			Properties:     p.Properties,
			Others:         p.Others,
			Declared:       p.Declared,
			Origin:         p.Origin,
		}
		keptBundles := map[string]bool{}
		keptChannels := map[string]bool{}
		for _, ch := range p.Channels {
			cs := ps.channels[ch.Name]
			if cs == nil || cs.ci.ch != ch || len(cs.keep) == 0 {
				continue
			}
			if _, err := cs.ci.repair(cs.keep); err != nil {
				return nil, err
			}
			nc := &fbc.Channel{Name: ch.Name, Package: ch.Package, Properties: ch.Properties, Origin: ch.Origin}
			for _, e := range ch.Entries {
				if cs.keep[e.Name] {
					nc.Entries = append(nc.Entries, e)
					keptBundles[e.Name] = true
				}
			}
			keptChannels[ch.Name] = true
			np.Channels = append(np.Channels, nc)
		}
		for _, b := range p.Bundles {
			if keptBundles[b.Name] {
				np.Bundles = append(np.Bundles, b)
			}
		}
		for _, d := range p.Deprecations {
			nd := &fbc.Deprecations{Package: d.Package, Origin: d.Origin}
			for _, e := range d.Entries {
				switch e.Reference.Schema {
				case fbc.SchemaBundle:
					if !keptBundles[e.Reference.Name] {
						continue
					}
				case fbc.SchemaChannel:
					if !keptChannels[e.Reference.Name] {
						continue
					}
				}
				nd.Entries = append(nd.Entries, e)
			}
			if len(nd.Entries) > 0 {
				np.Deprecations = append(np.Deprecations, nd)
			}
		}
		out.Packages = append(out.Packages, np)
	}
	return out, nil
}

// explain turns the recorded reasons into an Explanation of the output catalog.
func (f *filterer) explain(out *fbc.Catalog) *Explanation {
	e := &Explanation{Warnings: f.warnings}
	for _, p := range out.Packages {
		ps := f.sel[p.Name]
		if ps == nil {
			continue
		}
		pe := PackageExplanation{Name: p.Name, DefaultChannel: p.DefaultChannel, Dependency: ps.dependency, Dropped: ps.dropped}
		for _, ch := range p.Channels {
			ce := ChannelExplanation{Name: ch.Name}
			for _, en := range ch.Entries {
				ce.Entries = append(ce.Entries, en.Name)
			}
			pe.Channels = append(pe.Channels, ce)
		}
		for _, b := range p.Bundles {
			reasons := slices.Clone(ps.reasons[b.Name])
			sort.SliceStable(reasons, func(i, j int) bool { return reasons[i].Channel < reasons[j].Channel })
			pe.Bundles = append(pe.Bundles, BundleExplanation{Name: b.Name, Version: ps.idx.versionString(b.Name), Reasons: reasons})
		}
		e.Packages = append(e.Packages, pe)
	}
	sort.Slice(e.Packages, func(i, j int) bool { return e.Packages[i].Name < e.Packages[j].Name })
	return e
}
