package prune

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
)

// gvkKey identifies an API a bundle provides (olm.gvk) or requires (olm.gvk.required).
type gvkKey struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func (k gvkKey) String() string {
	if k.Group == "" {
		return k.Version + "/" + k.Kind
	}
	return k.Group + "/" + k.Version + "/" + k.Kind
}

// bundleRef names a bundle of a package.
type bundleRef struct {
	pkg, name string
}

// requirement is one dependency of a bundle.
type requirement struct {
	// pkg and rng are set for olm.package.required.
	pkg string
	rng semver.Range
	// gvk is set for olm.gvk.required.
	gvk   gvkKey
	isGVK bool
	// text describes the requirement as written, e.g. "olm.package.required bar <0.2.0".
	text string
}

// bundleRequirements parses the dependency properties of b. Unparsable ones are
// returned as warnings.
func bundleRequirements(pkg string, b *fbc.Bundle) ([]requirement, []string) {
	var reqs []requirement
	var warns []string
	for _, p := range b.Properties {
		switch p.Type {
		case fbc.PropertyPackageRequired:
			var v struct {
				PackageName  string `json:"packageName"`
				VersionRange string `json:"versionRange"`
			}
			if err := json.Unmarshal(p.Value, &v); err != nil || v.PackageName == "" {
				warns = append(warns, fmt.Sprintf("package %q bundle %q: ignoring unreadable %s property %s", pkg, b.Name, p.Type, string(p.Value)))
				continue
			}
			text := fmt.Sprintf("%s %s %s", fbc.PropertyPackageRequired, v.PackageName, v.VersionRange)
			rngStr := v.VersionRange
			if rngStr == "" {
				rngStr = ">=0.0.0-0"
			}
			rng, err := fbc.ParseSkipRange(rngStr)
			if err != nil {
				warns = append(warns, fmt.Sprintf("package %q bundle %q: ignoring %s: invalid versionRange: %v", pkg, b.Name, text, err))
				continue
			}
			reqs = append(reqs, requirement{pkg: v.PackageName, rng: rng, text: text})
		case fbc.PropertyGVKRequired:
			var k gvkKey
			if err := json.Unmarshal(p.Value, &k); err != nil || k.Kind == "" || k.Version == "" {
				warns = append(warns, fmt.Sprintf("package %q bundle %q: ignoring unreadable %s property %s", pkg, b.Name, p.Type, string(p.Value)))
				continue
			}
			reqs = append(reqs, requirement{gvk: k, isGVK: true, text: fmt.Sprintf("%s %s", fbc.PropertyGVKRequired, k)})
		}
	}
	return reqs, warns
}

// providedGVKs returns the olm.gvk properties of b.
func providedGVKs(b *fbc.Bundle) []gvkKey {
	var out []gvkKey
	for _, p := range b.Properties {
		if p.Type != fbc.PropertyGVK {
			continue
		}
		var k gvkKey
		if err := json.Unmarshal(p.Value, &k); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// gvkProviders returns the bundles of the source catalog that provide k.
func (f *filterer) gvkProviders(k gvkKey) []bundleRef {
	if f.providers == nil {
		f.providers = map[gvkKey][]bundleRef{}
		for _, p := range f.src.Packages {
			for _, b := range p.Bundles {
				for _, g := range providedGVKs(b) {
					f.providers[g] = append(f.providers[g], bundleRef{p.Name, b.Name})
				}
			}
		}
	}
	return f.providers[k]
}

// resolveDependencies adds, for every kept bundle, what its olm.package.required
// and olm.gvk.required properties need, until nothing new is added. A requirement
// already satisfied by a kept bundle adds nothing; otherwise the highest satisfying
// bundle of the source catalog is added with its path to its channel head.
func (f *filterer) resolveDependencies() error {
	var queue []bundleRef
	for _, name := range f.sortedSelection() {
		ps := f.sel[name]
		for _, b := range ps.idx.p.Bundles {
			if ps.kept(b.Name) {
				queue = append(queue, bundleRef{name, b.Name})
			}
		}
	}
	done := map[bundleRef]bool{}
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		if done[ref] {
			continue
		}
		done[ref] = true
		pi := f.pkgIndex(ref.pkg)
		b := pi.bundles[ref.name]
		if b == nil {
			continue
		}
		reqs, warns := bundleRequirements(ref.pkg, b)
		f.warnings = append(f.warnings, warns...)
		for _, req := range reqs {
			if f.satisfied(req) {
				continue
			}
			cand, ok := f.bestCandidate(req)
			if !ok {
				f.warnings = append(f.warnings, fmt.Sprintf("package %q bundle %q requires %s, which no bundle of this catalog provides: OLM must find it in another catalog", ref.pkg, ref.name, req.text))
				continue
			}
			added, err := f.addDependency(cand, Reason{Kind: ReasonDependency, Detail: fmt.Sprintf("of %s/%s: %s", ref.pkg, ref.name, req.text)})
			if err != nil {
				return err
			}
			queue = append(queue, added...)
		}
	}
	return nil
}

func (f *filterer) sortedSelection() []string {
	names := make([]string, 0, len(f.sel))
	for n := range f.sel {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// satisfied reports whether a kept bundle already satisfies req.
func (f *filterer) satisfied(req requirement) bool {
	if req.isGVK {
		for _, r := range f.gvkProviders(req.gvk) {
			if ps := f.sel[r.pkg]; ps != nil && ps.kept(r.name) {
				return true
			}
		}
		return false
	}
	ps := f.sel[req.pkg]
	if ps == nil {
		return false
	}
	for _, b := range ps.idx.p.Bundles {
		if !ps.kept(b.Name) {
			continue
		}
		if v, ok := ps.idx.version(b.Name); ok && req.rng(v) {
			return true
		}
	}
	return false
}

// inDefaultChannel reports whether bundle is an entry of the default channel of
// its package (the output's default when the package is selected).
func (f *filterer) inDefaultChannel(r bundleRef) bool {
	pi := f.pkgIndex(r.pkg)
	def := pi.p.DefaultChannel
	if ps := f.sel[r.pkg]; ps != nil {
		def = ps.defaultChannel
	}
	ci := pi.channels[def]
	return ci != nil && ci.graph().Has(r.name)
}

// inSomeChannel reports whether the bundle is an entry of a channel of its package.
func (f *filterer) channelsOf(r bundleRef) []string {
	pi := f.pkgIndex(r.pkg)
	var out []string
	for _, ch := range pi.p.Channels {
		if pi.channels[ch.Name].ch == ch && pi.channels[ch.Name].graph().Has(r.name) {
			out = append(out, ch.Name)
		}
	}
	return out
}

// bestCandidate picks the highest-version bundle satisfying req, preferring a
// bundle of its package's default channel on a tie, then names.
func (f *filterer) bestCandidate(req requirement) (bundleRef, bool) {
	var cands []bundleRef
	if req.isGVK {
		cands = f.gvkProviders(req.gvk)
	} else {
		pi := f.pkgIndex(req.pkg)
		if pi == nil {
			return bundleRef{}, false
		}
		for _, b := range pi.p.Bundles {
			if v, ok := pi.version(b.Name); ok && req.rng(v) {
				cands = append(cands, bundleRef{req.pkg, b.Name})
			}
		}
	}
	var best bundleRef
	var bestV semver.Version
	var bestDef, found bool
	for _, c := range cands {
		v, ok := f.pkgIndex(c.pkg).version(c.name)
		if !ok || len(f.channelsOf(c)) == 0 {
			continue
		}
		def := f.inDefaultChannel(c)
		better := !found
		if found {
			cmp := v.Compare(bestV)
			if cmp == 0 && c.pkg == best.pkg {
				cmp, _ = f.pkgIndex(c.pkg).compareBundles(c.name, best.name)
			}
			switch {
			case cmp != 0:
				better = cmp > 0
			case def != bestDef:
				better = def
			case c.pkg != best.pkg:
				better = c.pkg < best.pkg
			default:
				better = c.name < best.name
			}
		}
		if better {
			best, bestV, bestDef, found = c, v, def, true
		}
	}
	return best, found
}

// addDependency keeps bundle r (and its path to its channel head, and the head of
// its package's default channel when the package was not kept), recording why.
// It returns every bundle newly kept.
func (f *filterer) addDependency(r bundleRef, why Reason) ([]bundleRef, error) {
	ps := f.sel[r.pkg]
	if ps == nil {
		ps = f.selFor(r.pkg, true)
	}
	before := map[string]bool{}
	for _, b := range ps.idx.p.Bundles {
		if ps.kept(b.Name) {
			before[b.Name] = true
		}
	}
	// Choose the channel: the default one, else one already kept, else the first.
	chans := f.channelsOf(r)
	chosen := ""
	for _, c := range chans {
		if c == ps.defaultChannel {
			chosen = c
		}
	}
	if chosen == "" {
		for _, c := range chans {
			if ps.channels[c] != nil {
				chosen = c
				break
			}
		}
	}
	if chosen == "" {
		chosen = chans[0]
	}
	why.Channel = chosen
	ps.addReason(r.name, why)
	if err := f.keepWithPath(ps, chosen, r.name); err != nil {
		return nil, err
	}
	if ps.channels[ps.defaultChannel] == nil {
		ci := ps.idx.channels[ps.defaultChannel]
		if ci == nil {
			return nil, fmt.Errorf("package %q: default channel %q has no olm.channel document: the source catalog is invalid", r.pkg, ps.defaultChannel)
		}
		head, err := ci.channelHead()
		if err != nil {
			return nil, err
		}
		ps.chanSel(ci).keep[head] = true
		ps.addReason(head, Reason{Kind: ReasonHead, Channel: ps.defaultChannel, Detail: "kept so that the default channel of the package is not empty"})
	}
	var added []bundleRef
	for _, b := range ps.idx.p.Bundles {
		if !before[b.Name] && ps.kept(b.Name) {
			added = append(added, bundleRef{r.pkg, b.Name})
		}
	}
	return added, nil
}

// keepWithPath keeps bundle in channel ch of ps together with the upgrade path
// that links it to the channel's kept head (or, failing that, to the source
// channel head).
func (f *filterer) keepWithPath(ps *pkgSel, channel, bundle string) error {
	ci := ps.idx.channels[channel]
	srcHead, err := ci.channelHead()
	if err != nil {
		return err
	}
	cs := ps.chanSel(ci)
	if cs.keep[bundle] {
		return nil
	}
	curHead := ""
	if len(cs.keep) > 0 {
		if h, err := ci.subsetCheck(cs.keep); err == nil {
			curHead = h
		}
	}
	root := srcHead
	if curHead != "" {
		if _, ok := ci.pathFrom(curHead, bundle); ok {
			root = curHead
		}
	}
	trial := maps2(cs.keep)
	path, ok := ci.pathFrom(root, bundle)
	if !ok {
		return fmt.Errorf("package %q channel %q: bundle %q cannot be reached from the channel head %q: the source channel is invalid", ps.idx.p.Name, channel, bundle, root)
	}
	for _, n := range path {
		trial[n] = true
	}
	added, err := ci.repair(trial, root)
	if err != nil {
		return err
	}
	for _, n := range path {
		if n != bundle && !cs.keep[n] {
			ps.addContinuity(n, srcHead, channel)
		}
	}
	for _, n := range added {
		ps.addContinuity(n, srcHead, channel)
	}
	for n := range trial {
		cs.keep[n] = true
	}
	return nil
}
