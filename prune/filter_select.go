package prune

import (
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
)

// How Filter applies one package entry of the configuration (what it selects:
// SelectionOf, selection.go): its channels, and the contiguous range of each
// channel's replaces chain that is kept.

// selectPackage applies one packages[] entry (or the implicit heads-only entry).
func (f *filterer) selectPackage(ip imageset.IncludePackage) error {
	pi := f.pkgIndex(ip.Name)
	p := pi.p
	channelNames := make([]string, 0, len(p.Channels))
	for _, ch := range p.Channels {
		channelNames = append(channelNames, ch.Name)
	}
	includes := ip.Channels
	if len(includes) == 0 {
		for _, n := range channelNames {
			includes = append(includes, imageset.IncludeChannel{Name: n})
		}
	}
	for _, ic := range includes {
		if pi.channels[ic.Name] == nil {
			return f.errorf("package %q has no channel %q%s: its channels are %s", ip.Name, ic.Name, didYouMean(ic.Name, channelNames), strings.Join(channelNames, ", "))
		}
	}
	if ip.DefaultChannel != "" && pi.channels[ip.DefaultChannel] == nil {
		return f.errorf("package %q: defaultChannel %q is not a channel of the package%s: its channels are %s", ip.Name, ip.DefaultChannel, didYouMean(ip.DefaultChannel, channelNames), strings.Join(channelNames, ", "))
	}
	for _, sb := range ip.SelectedBundles {
		if pi.bundles[sb.Name] == nil {
			names := make([]string, 0, len(pi.bundles))
			for _, b := range p.Bundles {
				names = append(names, b.Name)
			}
			return f.errorf("package %q has no bundle %q%s", ip.Name, sb.Name, didYouMean(sb.Name, names))
		}
	}
	if _, err := ParseVersionRange(ip.IncludeBundle); err != nil {
		return f.errorf("package %q: %v", ip.Name, err)
	}

	ps := f.selFor(ip.Name, false)
	ps.dependency = false
	effDefault := p.DefaultChannel
	if ip.DefaultChannel != "" {
		effDefault = ip.DefaultChannel
	}
	ps.defaultChannel = effDefault

	selected := map[string]bool{}
	for _, sb := range ip.SelectedBundles {
		selected[sb.Name] = true
	}
	foundSelected := map[string]bool{}

	for _, ic := range includes {
		ci := pi.channels[ic.Name]
		sel, err := SelectionOf(f.op, &ip, &ic)
		if err != nil {
			return f.errorf("package %q channel %q: %v", ip.Name, ic.Name, err)
		}
		head, err := ci.channelHead()
		if err != nil {
			return err
		}
		keep := map[string]bool{}
		var dropReason string
		switch {
		case len(sel.Bundles) > 0:
			for _, e := range ci.ch.Entries {
				if selected[e.Name] {
					keep[e.Name] = true
					foundSelected[e.Name] = true
					ps.addReason(e.Name, Reason{Kind: ReasonRequested, Channel: ic.Name, Detail: "selected bundle"})
				}
			}
			if len(keep) == 0 {
				dropReason = "none of the selected bundles is in this channel"
				break
			}
			added, ok := ci.closeFrom(keep, head)
			if !ok {
				return fmt.Errorf("package %q channel %q: a selected bundle cannot be reached from the channel head %q along replaces edges (it is only skipped), so it cannot be kept on its own: select a bundle on the replaces chain instead", ip.Name, ic.Name, head)
			}
			for _, a := range added {
				ps.addContinuity(a, head, ic.Name)
			}
			keep[head] = true
		case sel.All:
			for _, e := range ci.ch.Entries {
				keep[e.Name] = true
				ps.addReason(e.Name, Reason{Kind: ReasonRequested, Channel: ic.Name, Detail: "full"})
			}
		case !sel.HeadOnly:
			if err := f.keepRange(ps, ci, head, sel.Range, keep); err != nil {
				return err
			}
			if len(keep) == 0 {
				dropReason = fmt.Sprintf("no bundle in range %s (channel versions: %s)", sel.Range, ci.versionSpan(pi))
			}
		default:
			keep[head] = true
			ps.addReason(head, Reason{Kind: ReasonHead, Channel: ic.Name})
		}
		if len(keep) == 0 {
			if ic.Name == effDefault {
				what := "widen minVersion/maxVersion"
				if len(selected) > 0 {
					what = "select a bundle of that channel"
				}
				return f.errorf("package %q: the filter leaves its default channel %q empty (%s): %s, or set packages[].defaultChannel to another kept channel", ip.Name, ic.Name, dropReason, what)
			}
			ps.dropped = append(ps.dropped, DroppedChannel{Name: ic.Name, Reason: dropReason})
			continue
		}
		cs := ps.chanSel(ci)
		for n := range keep {
			cs.keep[n] = true
		}
	}
	for _, sb := range ip.SelectedBundles {
		if !foundSelected[sb.Name] {
			return f.errorf("package %q: selected bundle %q is in none of the selected channels: add one of its channels to packages[].channels", ip.Name, sb.Name)
		}
	}
	if ps.channels[effDefault] == nil {
		kept := make([]string, 0, len(ps.channels))
		for n := range ps.channels {
			kept = append(kept, n)
		}
		sort.Strings(kept)
		if ip.DefaultChannel != "" {
			return f.errorf("package %q: defaultChannel %q is not among the kept channels (%s): add it to packages[].channels or choose one of those", ip.Name, effDefault, strings.Join(kept, ", "))
		}
		return f.errorf("package %q: its default channel %q is not selected: set packages[].defaultChannel to one of the kept channels (%s), or add channel %q to packages[].channels", ip.Name, effDefault, strings.Join(kept, ", "), effDefault)
	}
	return nil
}

// keepRange applies a version range to one channel with the algorithm of the
// oc-mirror v2 filter: count, for each node of the replaces chain, the in-range
// bundles at or below it (the node, its skips, the rest of the chain, each once);
// keep from the lowest node with the maximal count down to (excluding) the first
// node with count 0, plus the in-range skips of kept nodes.
func (f *filterer) keepRange(ps *pkgSel, ci *chanIndex, head string, vb VersionRange, keep map[string]bool) error {
	pi := ps.idx
	g := ci.graph()
	ch := ci.ch.Name
	inRange := func(name string) bool {
		v, ok := pi.version(name)
		return ok && vb.Contains(v)
	}
	requested := Reason{Kind: ReasonRequested, Channel: ch, Detail: "in range " + vb.String()}

	if vb.Exact() {
		// Exactly one bundle: with several releases of that version, the newest.
		best := ""
		for _, e := range ci.ch.Entries {
			if !inRange(e.Name) {
				continue
			}
			if c, ok := pi.compareBundles(e.Name, best); best == "" || (ok && c > 0) {
				best = e.Name
			}
		}
		if best != "" {
			keep[best] = true
			ps.addReason(best, Reason{Kind: ReasonRequested, Channel: ch, Detail: "version " + vb.Min.String()})
		}
		if len(keep) > 0 {
			if _, err := ci.subsetCheck(keep); err != nil {
				return fmt.Errorf("package %q channel %q: %w", ci.ch.Package, ch, err)
			}
		}
		return nil
	}

	chain := ci.fullReplacesChain(head)
	counts := make([]int, len(chain))
	seen := map[string]bool{}
	for i := len(chain) - 1; i >= 0; i-- {
		n := 0
		if i+1 < len(chain) {
			n = counts[i+1]
		}
		if !seen[chain[i]] && inRange(chain[i]) {
			seen[chain[i]] = true
			n++
		}
		e, _ := g.Entry(chain[i])
		for _, s := range e.Skips {
			if g.Has(s) && !seen[s] && inRange(s) {
				seen[s] = true
				n++
			}
		}
		counts[i] = n
	}
	hi, ti, maxCount := 0, len(chain), -1
	for i := range chain {
		if counts[i] >= maxCount {
			hi, maxCount = i, counts[i]
		}
		if counts[i] == 0 {
			ti = i
			break
		}
	}
	if maxCount <= 0 {
		return nil
	}
	for i := hi; i < ti; i++ {
		n := chain[i]
		keep[n] = true
		if inRange(n) {
			ps.addReason(n, requested)
		} else {
			ps.addReason(n, Reason{Kind: ReasonContinuity, Channel: ch, Detail: "on the replaces chain between bundles in range " + vb.String()})
		}
		e, _ := g.Entry(n)
		for _, s := range e.Skips {
			if g.Has(s) && inRange(s) {
				keep[s] = true
				ps.addReason(s, requested)
			}
		}
	}
	added, err := ci.repair(keep, chain[hi])
	if err != nil {
		return err
	}
	for _, a := range added {
		ps.addContinuity(a, head, ch)
	}
	return nil
}
