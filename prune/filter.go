package prune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/imageset"
)

// FilterOptions tunes Filter.
type FilterOptions struct {
	// Logger receives debug messages; nil discards them.
	Logger *slog.Logger
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
func Filter(c *Catalog, op imageset.Operator, opts FilterOptions) (*Catalog, *Explanation, error) {
	if c == nil {
		return nil, nil, fmt.Errorf("%w: no catalog to filter", ErrFilter)
	}
	f := &filterer{
		src:    c,
		op:     op,
		log:    opts.Logger,
		index:  make(map[string]*pkgIndex, len(c.Packages)),
		sel:    make(map[string]*pkgSel),
		byName: make(map[string]*Package, len(c.Packages)),
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
	expl := f.explain(out)
	if err := Validate(out); err != nil {
		return nil, nil, fmt.Errorf("%w: the filtered catalog is not valid, which is a bug in airlock or an invalid source catalog (check it with airlock catalog validate): %w", ErrFilter, err)
	}
	return out, expl, nil
}

// filterer holds the state of one Filter call.
type filterer struct {
	src    *Catalog
	op     imageset.Operator
	log    *slog.Logger
	byName map[string]*Package
	index  map[string]*pkgIndex
	sel    map[string]*pkgSel
	// order lists selected packages in the order they were selected.
	order    []string
	warnings []string
	// providers maps an olm.gvk to the bundles that provide it (built lazily).
	providers map[gvkKey][]bundleRef
}

// pkgIndex indexes one package of the source catalog.
type pkgIndex struct {
	p        *Package
	bundles  map[string]*Bundle
	channels map[string]*chanIndex
	versions map[string]versionInfo
}

type versionInfo struct {
	v       semver.Version
	release string
	ok      bool
}

// chanIndex indexes one channel of the source catalog.
type chanIndex struct {
	ch      *Channel
	g       *Graph
	head    string
	headErr error
	// parents caches, per root, the parent of every entry on the path from root.
	parents map[string]map[string]string
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
func (f *filterer) whole() (*Catalog, *Explanation, error) {
	out := &Catalog{Packages: slices.Clone(f.src.Packages), Others: slices.Clone(f.src.Others)}
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
	expl := f.explain(out)
	if err := Validate(out); err != nil {
		return nil, nil, fmt.Errorf("%w: the source catalog is not valid (full: true keeps it unchanged): %w", ErrFilter, err)
	}
	return out, expl, nil
}

func (f *filterer) pkgIndex(name string) *pkgIndex {
	if pi, ok := f.index[name]; ok {
		return pi
	}
	p := f.byName[name]
	if p == nil {
		return nil
	}
	pi := &pkgIndex{
		p:        p,
		bundles:  make(map[string]*Bundle, len(p.Bundles)),
		channels: make(map[string]*chanIndex, len(p.Channels)),
	}
	for _, b := range p.Bundles {
		if _, dup := pi.bundles[b.Name]; !dup {
			pi.bundles[b.Name] = b
		}
	}
	for _, ch := range p.Channels {
		if _, dup := pi.channels[ch.Name]; !dup {
			pi.channels[ch.Name] = &chanIndex{ch: ch}
		}
	}
	f.index[name] = pi
	return pi
}

func (f *filterer) chanIndex(pkg, ch string) *chanIndex {
	pi := f.pkgIndex(pkg)
	if pi == nil {
		return nil
	}
	return pi.channels[ch]
}

// version returns the version of bundle name of the package, if it has one.
func (pi *pkgIndex) version(name string) (semver.Version, bool) {
	if pi.versions == nil {
		pi.versions = make(map[string]versionInfo, len(pi.bundles))
	}
	if vi, ok := pi.versions[name]; ok {
		return vi.v, vi.ok
	}
	var vi versionInfo
	if b := pi.bundles[name]; b != nil {
		if v, err := BundleVersion(b); err == nil {
			vi = versionInfo{v: v, ok: true}
			if pv, err := BundlePackageProperty(b); err == nil {
				vi.release = pv.Release
			}
		}
	}
	pi.versions[name] = vi
	return vi.v, vi.ok
}

// compareBundles orders bundles a and b of the package by version, then by
// release (opm v1.62+: a rebuild of the same version; no release sorts first,
// releases compare as semver pre-release identifiers). ok is false when either
// has no version.
func (pi *pkgIndex) compareBundles(a, b string) (cmp int, ok bool) {
	va, oka := pi.version(a)
	vb, okb := pi.version(b)
	if !oka || !okb {
		return 0, false
	}
	if c := va.Compare(vb); c != 0 {
		return c, true
	}
	return compareRelease(pi.versions[a].release, pi.versions[b].release), true
}

// compareRelease compares two releases as dot-separated semver pre-release
// identifiers; the empty release is the lowest.
func compareRelease(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return -1
	case b == "":
		return 1
	}
	va, erra := semver.Parse("0.0.0-" + a)
	vb, errb := semver.Parse("0.0.0-" + b)
	if erra != nil || errb != nil {
		return strings.Compare(a, b)
	}
	return va.Compare(vb)
}

func (pi *pkgIndex) versionString(name string) string {
	if v, ok := pi.version(name); ok {
		return v.String()
	}
	return ""
}

func (ci *chanIndex) graph() *Graph {
	if ci.g == nil {
		ci.g = NewGraph(ci.ch)
		ci.head, ci.headErr = ci.g.Head()
	}
	return ci.g
}

// channelHead returns the head of the source channel or an error saying the
// source catalog is invalid.
func (ci *chanIndex) channelHead() (string, error) {
	ci.graph()
	if ci.headErr != nil {
		return "", fmt.Errorf("package %q channel %q of the source catalog: %w: the source catalog is invalid, fix or replace it", ci.ch.Package, ci.ch.Name, ci.headErr)
	}
	return ci.head, nil
}

// parentsFrom maps every entry reachable from root to its parent on the path from
// root: along root's replaces chain first (preferred), else through skips.
func (ci *chanIndex) parentsFrom(root string) map[string]string {
	if m, ok := ci.parents[root]; ok {
		return m
	}
	g := ci.graph()
	parent := map[string]string{}
	chain, _ := g.ReplacesChain(root)
	queue := make([]string, 0, len(chain))
	for i, n := range chain {
		if i > 0 {
			parent[n] = chain[i-1]
		}
		queue = append(queue, n)
	}
	seen := make(map[string]bool, len(chain))
	for _, n := range chain {
		seen[n] = true
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		e, ok := g.Entry(n)
		if !ok {
			continue
		}
		for _, s := range e.Skips {
			if seen[s] || !g.Has(s) {
				continue
			}
			seen[s] = true
			parent[s] = n
			queue = append(queue, s)
		}
	}
	if ci.parents == nil {
		ci.parents = map[string]map[string]string{}
	}
	ci.parents[root] = parent
	return parent
}

// pathFrom returns the entries from root down to target (root first), or false
// when target cannot be reached from root.
func (ci *chanIndex) pathFrom(root, target string) ([]string, bool) {
	if root == target {
		return []string{root}, true
	}
	parent := ci.parentsFrom(root)
	path := []string{target}
	for cur := target; cur != root; {
		p, ok := parent[cur]
		if !ok {
			return nil, false
		}
		path = append(path, p)
		cur = p
	}
	slices.Reverse(path)
	return path, true
}

// fullReplacesChain follows replaces from head while the replaced name is an
// entry of the channel, as the oc-mirror filter does (skips do not stop it).
func (ci *chanIndex) fullReplacesChain(head string) []string {
	g := ci.graph()
	chain := []string{head}
	seen := map[string]bool{head: true}
	for cur := head; ; {
		e, _ := g.Entry(cur)
		next := e.Replaces
		if next == "" || !g.Has(next) || seen[next] {
			return chain
		}
		seen[next] = true
		chain = append(chain, next)
		cur = next
	}
}

// subsetCheck reports whether the entries of the channel named in keep form a
// valid channel (one head, no cycle, no stranded entry) and returns its head.
func (ci *chanIndex) subsetCheck(keep map[string]bool) (string, error) {
	sub := &Channel{Name: ci.ch.Name, Package: ci.ch.Package}
	for _, e := range ci.ch.Entries {
		if keep[e.Name] {
			sub.Entries = append(sub.Entries, e)
		}
	}
	if len(sub.Entries) == 0 {
		return "", errors.New("channel must contain at least one bundle")
	}
	g := NewGraph(sub)
	if err := g.Check(); err != nil {
		return "", err
	}
	head, _ := g.Head()
	return head, nil
}

// closeFrom adds to keep the path from root to every kept entry. It returns the
// entries it added, or false if some kept entry cannot be reached from root.
func (ci *chanIndex) closeFrom(keep map[string]bool, root string) ([]string, bool) {
	names := make([]string, 0, len(keep))
	for _, e := range ci.ch.Entries {
		if keep[e.Name] {
			names = append(names, e.Name)
		}
	}
	add := map[string]bool{}
	for _, n := range names {
		path, ok := ci.pathFrom(root, n)
		if !ok {
			return nil, false
		}
		for _, p := range path {
			if !keep[p] {
				add[p] = true
			}
		}
	}
	var added []string
	for _, e := range ci.ch.Entries {
		if add[e.Name] {
			added = append(added, e.Name)
			keep[e.Name] = true
		}
	}
	return added, true
}

// repair makes keep a valid channel: it tries each root in turn (the current head
// first, the source channel head last), adding the paths from it to every kept
// entry. It returns the added entries.
func (ci *chanIndex) repair(keep map[string]bool, roots ...string) ([]string, error) {
	if _, err := ci.subsetCheck(keep); err == nil {
		return nil, nil
	}
	head, err := ci.channelHead()
	if err != nil {
		return nil, err
	}
	roots = append(roots, head)
	var lastErr error
	for _, root := range roots {
		if root == "" || !ci.graph().Has(root) {
			continue
		}
		trial := maps2(keep)
		trial[root] = true
		added, ok := ci.closeFrom(trial, root)
		if !ok {
			continue
		}
		if _, err := ci.subsetCheck(trial); err != nil {
			lastErr = err
			continue
		}
		for _, a := range added {
			keep[a] = true
		}
		if !keep[root] {
			keep[root] = true
			added = append([]string{root}, added...)
		}
		return added, nil
	}
	if lastErr == nil {
		lastErr = errors.New("some kept entries cannot be reached from the channel head")
	}
	return nil, fmt.Errorf("package %q channel %q: cannot keep a valid upgrade graph: %w: the source channel is probably invalid (check it with airlock catalog validate)", ci.ch.Package, ci.ch.Name, lastErr)
}

func maps2(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m)+4)
	for k, v := range m {
		out[k] = v
	}
	return out
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

// versionBounds is a parsed minVersion/maxVersion pair.
type versionBounds struct {
	min, max       *semver.Version
	minStr, maxStr string
}

func (vb versionBounds) set() bool { return vb.min != nil || vb.max != nil }

func (vb versionBounds) String() string {
	var parts []string
	if vb.min != nil {
		parts = append(parts, ">="+vb.min.String())
	}
	if vb.max != nil {
		parts = append(parts, "<="+vb.max.String())
	}
	return strings.Join(parts, " ")
}

func (vb versionBounds) contains(v semver.Version) bool {
	if vb.min != nil && v.LT(*vb.min) {
		return false
	}
	if vb.max != nil && v.GT(*vb.max) {
		return false
	}
	return true
}

func (vb versionBounds) exact() bool {
	return vb.min != nil && vb.max != nil && vb.min.EQ(*vb.max)
}

func (f *filterer) parseBounds(pkg, where string, ib imageset.IncludeBundle) (versionBounds, error) {
	vb := versionBounds{minStr: ib.MinVersion, maxStr: ib.MaxVersion}
	parse := func(field, s string) (*semver.Version, error) {
		if s == "" {
			return nil, nil
		}
		v, err := semver.ParseTolerant(s)
		if err != nil {
			return nil, f.errorf("package %q%s: invalid %s %q: %v: use a semantic version such as 1.2.3", pkg, where, field, s, err)
		}
		return &v, nil
	}
	var err error
	if vb.min, err = parse("minVersion", ib.MinVersion); err != nil {
		return vb, err
	}
	if vb.max, err = parse("maxVersion", ib.MaxVersion); err != nil {
		return vb, err
	}
	if vb.min != nil && vb.max != nil && vb.min.GT(*vb.max) {
		return vb, f.errorf("package %q%s: minVersion %s is greater than maxVersion %s: swap them", pkg, where, ib.MinVersion, ib.MaxVersion)
	}
	return vb, nil
}

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
	pkgBounds, err := f.parseBounds(ip.Name, "", ip.IncludeBundle)
	if err != nil {
		return err
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
		bounds := pkgBounds
		if ic.MinVersion != "" || ic.MaxVersion != "" {
			if bounds, err = f.parseBounds(ip.Name, fmt.Sprintf(" channel %q", ic.Name), ic.IncludeBundle); err != nil {
				return err
			}
		}
		head, err := ci.channelHead()
		if err != nil {
			return err
		}
		keep := map[string]bool{}
		var dropReason string
		switch {
		case len(selected) > 0:
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
		case f.op.Full:
			for _, e := range ci.ch.Entries {
				keep[e.Name] = true
				ps.addReason(e.Name, Reason{Kind: ReasonRequested, Channel: ic.Name, Detail: "full"})
			}
		case bounds.set():
			if err := f.keepRange(ps, ci, head, bounds, keep); err != nil {
				return err
			}
			if len(keep) == 0 {
				dropReason = fmt.Sprintf("no bundle in range %s (channel versions: %s)", bounds, ci.versionSpan(pi))
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

func (ps *pkgSel) addContinuity(bundle, head, channel string) {
	detail := "on the upgrade path to the channel head " + head
	if bundle == head {
		ps.addReason(bundle, Reason{Kind: ReasonHead, Channel: channel})
		return
	}
	ps.addReason(bundle, Reason{Kind: ReasonContinuity, Channel: channel, Detail: detail})
}

// versionSpan describes the lowest and highest versions of a channel's entries.
func (ci *chanIndex) versionSpan(pi *pkgIndex) string {
	var lo, hi *semver.Version
	for _, e := range ci.ch.Entries {
		v, ok := pi.version(e.Name)
		if !ok {
			continue
		}
		if lo == nil || v.LT(*lo) {
			lo = &v
		}
		if hi == nil || v.GT(*hi) {
			hi = &v
		}
	}
	if lo == nil {
		return "none"
	}
	if lo.EQ(*hi) {
		return lo.String()
	}
	return lo.String() + " to " + hi.String()
}

// keepRange applies a version range to one channel with the algorithm of the
// oc-mirror v2 filter: count, for each node of the replaces chain, the in-range
// bundles at or below it (the node, its skips, the rest of the chain, each once);
// keep from the lowest node with the maximal count down to (excluding) the first
// node with count 0, plus the in-range skips of kept nodes.
func (f *filterer) keepRange(ps *pkgSel, ci *chanIndex, head string, vb versionBounds, keep map[string]bool) error {
	pi := ps.idx
	g := ci.graph()
	ch := ci.ch.Name
	inRange := func(name string) bool {
		v, ok := pi.version(name)
		return ok && vb.contains(v)
	}
	requested := Reason{Kind: ReasonRequested, Channel: ch, Detail: "in range " + vb.String()}

	if vb.exact() {
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
			ps.addReason(best, Reason{Kind: ReasonRequested, Channel: ch, Detail: "version " + vb.min.String()})
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

// build assembles the output catalog from the selection.
func (f *filterer) build() (*Catalog, error) {
	out := &Catalog{Others: slices.Clone(f.src.Others)}
	for _, p := range f.src.Packages {
		ps := f.sel[p.Name]
		if ps == nil || ps.idx.p != p {
			continue
		}
		np := &Package{
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
			nc := &Channel{Name: ch.Name, Package: ch.Package, Properties: ch.Properties, Origin: ch.Origin}
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
			nd := &Deprecations{Package: d.Package, Origin: d.Origin}
			for _, e := range d.Entries {
				switch e.Reference.Schema {
				case SchemaBundle:
					if !keptBundles[e.Reference.Name] {
						continue
					}
				case SchemaChannel:
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
func (f *filterer) explain(out *Catalog) *Explanation {
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

// missingPackages builds the error for packages the catalog does not have.
func (f *filterer) missingPackages(missing []string) error {
	names := make([]string, 0, len(f.src.Packages))
	for _, p := range f.src.Packages {
		names = append(names, p.Name)
	}
	msgs := make([]string, 0, len(missing))
	for _, m := range missing {
		msgs = append(msgs, fmt.Sprintf("%q%s", m, didYouMean(m, names)))
	}
	what := "package"
	if len(missing) > 1 {
		what = "packages"
	}
	cat, hint := "the catalog", "airlock list operators --catalog CATALOG"
	if f.op.Catalog != "" {
		cat, hint = "catalog "+f.op.Catalog, "airlock list operators --catalog "+f.op.Catalog
	}
	return f.errorf("%s has no %s %s: check the names with %s", cat, what, strings.Join(msgs, ", "), hint)
}

// didYouMean returns " (did you mean a, b?)" with the names closest to s, or "".
func didYouMean(s string, names []string) string {
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	ls := strings.ToLower(s)
	for _, n := range names {
		ln := strings.ToLower(n)
		d := editDistance(ls, ln)
		limit := max(1, len(s)/3)
		if (d <= limit && d < len(ls)) || (len(ls) >= 3 && (strings.Contains(ln, ls) || strings.Contains(ls, ln))) {
			cands = append(cands, cand{n, d})
		}
	}
	if len(cands) == 0 {
		return ""
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].name < cands[j].name
	})
	if len(cands) > 3 {
		cands = cands[:3]
	}
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.name
	}
	return " (did you mean " + strings.Join(out, ", ") + "?)"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// PruneOptions are the inputs of PruneDir (airlock catalog prune).
type PruneOptions struct {
	// ConfigPath is the ImageSetConfiguration file.
	ConfigPath string
	// Source is the root directory of the file-based catalog to prune.
	Source string
	// Dir, when set, is the folder loaded instead of Source, which then only
	// selects the configuration's entry (a SQLite database converted to a
	// temporary folder, say).
	Dir string
	// OutDir receives the pruned catalog; it must be empty or absent. Empty: the
	// catalog is filtered and explained but not written.
	OutDir string
	// Format is FormatJSON (default) or FormatYAML.
	Format string
	// Logger receives progress and debug messages; nil discards them.
	Logger *slog.Logger
}

// PruneResult is what PruneDir did.
type PruneResult struct {
	// Operator is the mirror.operators entry that was applied.
	Operator    imageset.Operator
	Catalog     *Catalog
	Explanation *Explanation
}

// PruneDir loads the configuration and the catalog directory, applies the
// operator entry that names the catalog (see SelectOperator), and writes the
// pruned catalog to opts.OutDir.
func PruneDir(ctx context.Context, opts PruneOptions) (*PruneResult, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Source == "" {
		return nil, errors.New("no catalog directory given: pass the root directory of a file-based catalog")
	}
	if opts.OutDir != "" {
		if err := checkOutDir(opts.OutDir); err != nil {
			return nil, err
		}
		if _, _, err := formatOf(opts.Format); err != nil {
			return nil, err
		}
	}
	cfg, err := imageset.LoadFile(opts.ConfigPath)
	if err != nil {
		return nil, err
	}
	op, err := SelectOperator(cfg, opts.Source)
	if err != nil {
		return nil, err
	}
	dir := opts.Source
	if opts.Dir != "" {
		dir = opts.Dir
	}
	log.Debug("loading catalog", "dir", dir)
	c, err := LoadDir(ctx, dir, LoadOptions{ElideHeavy: true, Logger: log})
	if err != nil {
		return nil, err
	}
	out, expl, err := Filter(c, op, FilterOptions{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("%s: catalog %s: %w", cfg.Source, op.Catalog, err)
	}
	for _, w := range expl.Warnings {
		log.Warn(w)
	}
	if opts.OutDir != "" {
		if err := Write(ctx, out, opts.OutDir, WriteOptions{Format: opts.Format}); err != nil {
			return nil, err
		}
	}
	return &PruneResult{Operator: op, Catalog: out, Explanation: expl}, nil
}

// checkOutDir refuses an output directory that exists and is not an empty directory.
func checkOutDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("output directory %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("output directory %s is not empty: choose a new or empty directory", dir)
	}
	return nil
}

// SelectOperator returns the mirror.operators entry of cfg for the catalog
// directory source: the entry whose catalog is source itself or oci://<source>
// (relative or absolute), else the only entry, else an error listing the catalogs.
func SelectOperator(cfg *imageset.ImageSetConfiguration, source string) (imageset.Operator, error) {
	ops := cfg.Mirror.Operators
	if len(ops) == 0 {
		return imageset.Operator{}, fmt.Errorf("%s has no mirror.operators entry: add one whose catalog is oci://%s", cfg.Source, absOr(source))
	}
	want := absOr(source)
	for _, op := range ops {
		cat := op.Catalog
		if cat == source {
			return op, nil
		}
		if p, ok := strings.CutPrefix(cat, "oci://"); ok && absOr(p) == want {
			return op, nil
		}
	}
	if len(ops) == 1 {
		return ops[0], nil
	}
	cats := make([]string, len(ops))
	for i, op := range ops {
		cats[i] = op.Catalog
	}
	return imageset.Operator{}, fmt.Errorf("%s has %d mirror.operators entries and none is for %s: set one entry's catalog to oci://%s (catalogs: %s)", cfg.Source, len(ops), source, want, strings.Join(cats, ", "))
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}
