package conformance

import (
	"fmt"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/imageset"
)

// oRefusal is a refusal: the class of the reason and a message. The classes
// are what the comparison checks (docs/conformance.md lists them). A product
// refusal that names several problems of the configuration has the classes of
// the others in also; the oracle's class must be one of them.
type oRefusal struct {
	class, msg string
	also       []string
}

func (r *oRefusal) Error() string { return r.class + ": " + r.msg }

func refuse(class, format string, args ...any) *oRefusal {
	return &oRefusal{class: class, msg: fmt.Sprintf(format, args...)}
}

// oResult is what a configuration keeps: per package its default channel and,
// per channel, the kept entries.
type oResult struct {
	pkgs map[string]*oOut
}

type oOut struct {
	defaultChannel string
	chans          map[string]map[string]bool
}

// oracle holds one run of the model.
type oracle struct {
	cat      *oCatalog
	op       imageset.Operator
	out      map[string]*oOut
	warnings []string
}

// oracleFilter applies the operator entry op to cat, by the rules of
// docs/catalog-prune.md.
func oracleFilter(cat *oCatalog, op imageset.Operator) (*oResult, *oRefusal) {
	o := &oracle{cat: cat, op: op, out: map[string]*oOut{}}
	if r := o.checkConfig(); r != nil {
		return nil, r
	}
	if len(op.Packages) == 0 && op.Full {
		// The catalog unchanged.
		for _, n := range cat.names {
			p := cat.pkgs[n]
			out := &oOut{defaultChannel: p.defaultChannel, chans: map[string]map[string]bool{}}
			for cn, ch := range p.chans {
				out.chans[cn] = map[string]bool{}
				for e := range ch.entries {
					out.chans[cn][e] = true
				}
			}
			o.out[n] = out
		}
		return &oResult{o.out}, nil
	}
	pkgs := op.Packages
	if len(pkgs) == 0 {
		for _, n := range cat.names {
			pkgs = append(pkgs, imageset.IncludePackage{Name: n})
		}
	}
	var missing []string
	for _, ip := range pkgs {
		if cat.pkgs[ip.Name] == nil {
			missing = append(missing, ip.Name)
		}
	}
	if len(missing) > 0 {
		return nil, refuse("unknown-package", "no package %v", missing)
	}
	for _, ip := range pkgs {
		if r := o.selectPackage(ip); r != nil {
			return nil, r
		}
	}
	if !op.SkipDependencies {
		if r := o.resolveDependencies(); r != nil {
			return nil, r
		}
	}
	return &oResult{o.out}, nil
}

// checkConfig: what the configuration itself may not hold (names, the
// combinations of range, full and bundles, versions). Every problem is
// collected: the refusal has the first one's class and the others' in also.
func (o *oracle) checkConfig() *oRefusal {
	var r *oRefusal
	problem := func(class, format string, args ...any) {
		if r == nil {
			r = refuse(class, format, args...)
		} else {
			r.also = append(r.also, class)
		}
	}
	seen := map[string]bool{}
	for _, ip := range o.op.Packages {
		if ip.Name == "" || seen[ip.Name] {
			problem("config", "package name empty or listed twice: %q", ip.Name)
		}
		seen[ip.Name] = true
		if _, bad := parseRange(ip.IncludeBundle); bad != nil {
			problem(bad.class, "%s: %s", ip.Name, bad.msg)
		}
		chanRange := false
		seenCh := map[string]bool{}
		for _, ic := range ip.Channels {
			if ic.Name == "" || seenCh[ic.Name] {
				problem("config", "channel name empty or listed twice: %q", ic.Name)
			}
			seenCh[ic.Name] = true
			if ic.MinVersion != "" || ic.MaxVersion != "" {
				chanRange = true
			}
			if _, bad := parseRange(ic.IncludeBundle); bad != nil {
				problem(bad.class, "%s/%s: %s", ip.Name, ic.Name, bad.msg)
			}
		}
		if ip.DefaultChannel != "" && len(ip.Channels) > 0 && !seenCh[ip.DefaultChannel] {
			problem("config", "%s: defaultChannel %s is not a listed channel", ip.Name, ip.DefaultChannel)
		}
		pkgRange := ip.MinVersion != "" || ip.MaxVersion != ""
		if pkgRange && chanRange {
			problem("config", "%s: range at both levels", ip.Name)
		}
		if o.op.Full && (pkgRange || chanRange) {
			problem("config", "%s: full with a range", ip.Name)
		}
		if o.op.Full && len(ip.SelectedBundles) > 0 {
			problem("config", "%s: full with bundles", ip.Name)
		}
		if len(ip.SelectedBundles) > 0 && (pkgRange || chanRange) {
			problem("config", "%s: bundles with a range", ip.Name)
		}
	}
	return r
}

// parseRange reads minVersion/maxVersion: full semver versions, min <= max.
func parseRange(b imageset.IncludeBundle) (oRange, *oRefusal) {
	var r oRange
	var err error
	if b.MinVersion != "" {
		if r.min, err = semver.Parse(b.MinVersion); err != nil {
			return r, refuse("bad-version", "minVersion %q: %v", b.MinVersion, err)
		}
		r.hasMin = true
	}
	if b.MaxVersion != "" {
		if r.max, err = semver.Parse(b.MaxVersion); err != nil {
			return r, refuse("bad-version", "maxVersion %q: %v", b.MaxVersion, err)
		}
		r.hasMax = true
	}
	if r.hasMin && r.hasMax && r.min.Compare(r.max) > 0 {
		return r, refuse("bad-version", "minVersion %s above maxVersion %s", r.min, r.max)
	}
	return r, nil
}

// outPkg returns the output package p, created with its original default channel.
func (o *oracle) outPkg(p *oPkg) *oOut {
	out := o.out[p.name]
	if out == nil {
		out = &oOut{defaultChannel: p.defaultChannel, chans: map[string]map[string]bool{}}
		o.out[p.name] = out
	}
	return out
}

// selectPackage keeps what one packages[] entry asks for.
func (o *oracle) selectPackage(ip imageset.IncludePackage) *oRefusal {
	p := o.cat.pkgs[ip.Name]
	chans := p.chanNames
	if len(ip.Channels) > 0 {
		chans = nil
		for _, ic := range ip.Channels {
			if p.chans[ic.Name] == nil {
				return refuse("unknown-channel", "package %s has no channel %s", p.name, ic.Name)
			}
			chans = append(chans, ic.Name)
		}
	}
	if ip.DefaultChannel != "" && p.chans[ip.DefaultChannel] == nil {
		return refuse("unknown-default-channel", "package %s has no channel %s", p.name, ip.DefaultChannel)
	}
	for _, sb := range ip.SelectedBundles {
		if p.bundles[sb.Name] == nil {
			return refuse("unknown-bundle", "package %s has no bundle %s", p.name, sb.Name)
		}
	}
	pkgRange, r := parseRange(ip.IncludeBundle)
	if r != nil {
		return r
	}
	chanRange := map[string]oRange{}
	for _, ic := range ip.Channels {
		if chanRange[ic.Name], r = parseRange(ic.IncludeBundle); r != nil {
			return r
		}
	}
	def := p.defaultChannel
	if ip.DefaultChannel != "" {
		def = ip.DefaultChannel
	}
	kept := map[string]map[string]bool{}
	found := map[string]bool{}
	for _, cn := range chans {
		ch := p.chans[cn]
		rng := pkgRange
		if cr := chanRange[cn]; cr.set() {
			rng = cr
		}
		var keep map[string]bool
		switch {
		case o.op.Full:
			keep = map[string]bool{}
			for e := range ch.entries {
				keep[e] = true
			}
		case rng.set():
			if keep, r = o.rangeSelect(p, ch, rng); r != nil {
				return r
			}
			if len(keep) == 0 && cn == def {
				return refuse("default-channel-emptied", "package %s: range empties default channel %s", p.name, cn)
			}
		case len(ip.SelectedBundles) > 0:
			// The selected bundles of this channel, with the path from the
			// head to each.
			keep = map[string]bool{}
			head := oHead(ch)
			for _, sb := range ip.SelectedBundles {
				if ch.entries[sb.Name] == nil {
					continue
				}
				if head == "" {
					return refuse("invalid-source", "package %s channel %s has no single head", p.name, cn)
				}
				found[sb.Name] = true
				path := oPath(ch, head, sb.Name)
				if path == nil {
					return refuse("bundle-only-skipped", "package %s channel %s: %s cannot be reached from the head", p.name, cn, sb.Name)
				}
				for _, n := range path {
					keep[n] = true
				}
			}
			if len(keep) == 0 && cn == def {
				return refuse("default-channel-emptied", "package %s: no selected bundle in default channel %s", p.name, cn)
			}
		default:
			head := oHead(ch)
			if head == "" {
				return refuse("invalid-source", "package %s channel %s has no single head", p.name, cn)
			}
			keep = map[string]bool{head: true}
		}
		if len(keep) > 0 {
			kept[cn] = keep
		}
	}
	for _, sb := range ip.SelectedBundles {
		if !found[sb.Name] {
			return refuse("bundle-not-in-channels", "package %s: bundle %s in none of the selected channels", p.name, sb.Name)
		}
	}
	if kept[def] == nil {
		if ip.DefaultChannel != "" {
			return refuse("default-channel-not-kept", "package %s: defaultChannel %s not kept", p.name, def)
		}
		return refuse("default-channel-not-selected", "package %s: default channel %s not selected", p.name, def)
	}
	out := o.outPkg(p)
	out.defaultChannel = def
	for cn, keep := range kept {
		if out.chans[cn] == nil {
			out.chans[cn] = map[string]bool{}
		}
		for e := range keep {
			out.chans[cn][e] = true
		}
	}
	return nil
}

// rangeSelect is "How a version range is applied to a channel" of
// docs/catalog-prune.md, steps 1 to 5.
func (o *oracle) rangeSelect(p *oPkg, ch *oChan, rng oRange) (map[string]bool, *oRefusal) {
	head := oHead(ch)
	if head == "" {
		return nil, refuse("invalid-source", "package %s channel %s has no single head", p.name, ch.name)
	}
	chain, ok := oChain(ch, head)
	if !ok {
		return nil, refuse("invalid-source", "package %s channel %s: replaces cycle", p.name, ch.name)
	}
	in := func(n string) bool { return ch.entries[n] != nil && rng.has(p.bundles[n]) }
	keep := map[string]bool{}
	if rng.exact() {
		// Exactly one bundle: of several of that version, the newest release,
		// else the first entry.
		var best *oBundle
		for _, n := range ch.order {
			if in(n) && (best == nil || newer(p.bundles[n], best)) {
				best = p.bundles[n]
			}
		}
		if best != nil {
			keep[best.name] = true
		}
		return keep, nil
	}
	// Step 2: counts, from the bottom of the chain up.
	counts := make([]int, len(chain))
	seen := map[string]bool{}
	n := 0
	for i := len(chain) - 1; i >= 0; i-- {
		for _, x := range append([]string{chain[i]}, ch.entries[chain[i]].skips...) {
			if !seen[x] && in(x) {
				n++
			}
			seen[x] = true
		}
		counts[i] = n
	}
	if len(chain) == 0 || counts[0] == 0 {
		return keep, nil
	}
	// Step 3: the lowest node with the maximal count; the first node with count 0.
	newHead := 0
	for i := range chain {
		if counts[i] == counts[0] {
			newHead = i
		}
	}
	tail := len(chain)
	for i := range chain {
		if counts[i] == 0 {
			tail = i
			break
		}
	}
	// Step 4.
	for i := newHead; i < tail; i++ {
		keep[chain[i]] = true
		for _, s := range ch.entries[chain[i]].skips {
			if in(s) {
				keep[s] = true
			}
		}
	}
	// Step 5.
	if !oRepair(ch, keep, chain[newHead]) {
		return nil, refuse("invalid-source", "package %s channel %s: no valid upgrade graph", p.name, ch.name)
	}
	return keep, nil
}
