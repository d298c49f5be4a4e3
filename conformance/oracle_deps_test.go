package conformance

import (
	"fmt"

	"github.com/blang/semver/v4"
)

// Dependencies, as "Dependencies" of docs/catalog-prune.md says: every kept
// bundle is visited once, in a queue (first the selected bundles by package then
// bundle name, then what each addition brings in); each of its
// olm.package.required and olm.gvk.required properties, in order, that no kept
// bundle satisfies at that moment brings in the best bundle of the catalog that
// does (highest version; then a newer release of the same package; then one in
// its package's default channel; then by package and bundle name) with its
// upgrade path to the head of its channel.

// kept lists the kept bundles of package pn, by name.
func (o *oracle) kept(pn string) []*oBundle {
	out := o.out[pn]
	if out == nil {
		return nil
	}
	p := o.cat.pkgs[pn]
	var bs []*oBundle
	for _, n := range p.bundleNames {
		for _, entries := range out.chans {
			if entries[n] {
				bs = append(bs, p.bundles[n])
				break
			}
		}
	}
	return bs
}

// satisfies reports whether bundle x satisfies requirement r (rng parsed).
func satisfies(r oReq, rng semver.Range, x *oBundle) bool {
	if r.gvk != nil {
		for _, g := range x.gvks {
			if g == *r.gvk {
				return true
			}
		}
		return false
	}
	return x.pkg == r.pkg && x.verOK && rng(x.version)
}

// defaultOf is the default channel of package pn in the result (the
// configuration's defaultChannel for a selected package), else the catalog's.
func (o *oracle) defaultOf(pn string) string {
	if out := o.out[pn]; out != nil {
		return out.defaultChannel
	}
	return o.cat.pkgs[pn].defaultChannel
}

func (o *oracle) inDefault(b *oBundle) bool {
	ch := o.cat.pkgs[b.pkg].chans[o.defaultOf(b.pkg)]
	return ch != nil && ch.entries[b.name] != nil
}

func (o *oracle) inAChannel(b *oBundle) bool {
	for _, ch := range o.cat.pkgs[b.pkg].chans {
		if ch.entries[b.name] != nil {
			return true
		}
	}
	return false
}

// better reports whether a is preferred over b as a provider.
func (o *oracle) better(a, b *oBundle) bool {
	if c := a.version.Compare(b.version); c != 0 {
		return c > 0
	}
	if a.pkg == b.pkg && (newer(a, b) || newer(b, a)) {
		return newer(a, b)
	}
	if o.inDefault(a) != o.inDefault(b) {
		return o.inDefault(a)
	}
	if a.pkg != b.pkg {
		return a.pkg < b.pkg
	}
	return a.name < b.name
}

func (o *oracle) resolveDependencies() *oRefusal {
	var queue []*oBundle
	for _, pn := range o.cat.names {
		queue = append(queue, o.kept(pn)...)
	}
	done := map[*oBundle]bool{}
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		if done[b] {
			continue
		}
		done[b] = true
		for _, r := range b.reqs {
			var rng semver.Range
			if r.gvk == nil {
				s := r.rng
				if s == "" {
					s = ">=0.0.0-0" // no range: any version
				}
				var err error
				if rng, err = semver.ParseRange(s); err != nil {
					o.warnings = append(o.warnings, fmt.Sprintf("%s: bad versionRange %q", b.name, r.rng))
					continue
				}
			}
			satisfied := false
			for _, pn := range o.cat.names {
				for _, k := range o.kept(pn) {
					satisfied = satisfied || satisfies(r, rng, k)
				}
			}
			if satisfied {
				continue
			}
			var best *oBundle
			for _, pn := range o.cat.names {
				for _, x := range o.cat.pkgs[pn].bundles {
					if x.verOK && o.inAChannel(x) && satisfies(r, rng, x) && (best == nil || o.better(x, best)) {
						best = x
					}
				}
			}
			if best == nil {
				o.warnings = append(o.warnings, fmt.Sprintf("%s/%s requires %+v: no provider", b.pkg, b.name, r))
				continue
			}
			before := map[*oBundle]bool{}
			for _, k := range o.kept(best.pkg) {
				before[k] = true
			}
			if r := o.keepDependency(best); r != nil {
				return r
			}
			for _, k := range o.kept(best.pkg) {
				if !before[k] {
					queue = append(queue, k)
				}
			}
		}
	}
	return nil
}

// keepDependency keeps b in a channel of its package: its default channel if b
// is in it, else a kept channel holding it, else the first by name, with the
// upgrade path from the channel's kept head (when the kept entries form a valid
// channel and b can be reached from it), else from the channel head; then
// repairs the channel (step 5 of the range algorithm). A package that had
// nothing kept gets its default channel's head too.
func (o *oracle) keepDependency(b *oBundle) *oRefusal {
	p := o.cat.pkgs[b.pkg]
	out := o.outPkg(p)
	var chName string
	if o.inDefault(b) {
		chName = out.defaultChannel
	}
	for _, cn := range p.chanNames {
		if chName == "" && out.chans[cn] != nil && p.chans[cn].entries[b.name] != nil {
			chName = cn
		}
	}
	for _, cn := range p.chanNames {
		if chName == "" && p.chans[cn].entries[b.name] != nil {
			chName = cn
		}
	}
	ch := p.chans[chName]
	head := oHead(ch)
	if head == "" {
		return refuse("invalid-source", "package %s channel %s has no single head", p.name, chName)
	}
	keep := out.chans[chName]
	if keep == nil {
		keep = map[string]bool{}
	}
	if !keep[b.name] {
		root := head
		if len(keep) > 0 && oValid(ch, keep) {
			if h := oHeads(ch, keep)[0]; oPath(ch, h, b.name) != nil {
				root = h
			}
		}
		path := oPath(ch, root, b.name)
		if path == nil {
			return refuse("invalid-source", "package %s channel %s: %s cannot be reached from %s", p.name, chName, b.name, root)
		}
		for _, n := range path {
			keep[n] = true
		}
		if !oRepair(ch, keep, root) {
			return refuse("invalid-source", "package %s channel %s: no valid upgrade graph", p.name, chName)
		}
		out.chans[chName] = keep
	}
	if out.chans[out.defaultChannel] == nil {
		dc := p.chans[out.defaultChannel]
		if dc == nil || oHead(dc) == "" {
			return refuse("invalid-source", "package %s: default channel %s has no single head", p.name, out.defaultChannel)
		}
		out.chans[out.defaultChannel] = map[string]bool{oHead(dc): true}
	}
	return nil
}
