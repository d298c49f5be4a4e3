package prune

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
)

// Indexes Filter builds over one package and its channels: bundle versions
// and their ordering, and walks of a channel's replaces graph (heads, paths,
// the replaces chain, repairs of a kept subset).

// pkgIndex indexes one package of the source catalog.
type pkgIndex struct {
	p        *fbc.Package
	bundles  map[string]*fbc.Bundle
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
	ch      *fbc.Channel
	g       *fbc.Graph
	head    string
	headErr error
	// parents caches, per root, the parent of every entry on the path from root.
	parents map[string]map[string]string
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
		bundles:  make(map[string]*fbc.Bundle, len(p.Bundles)),
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
		if v, err := fbc.BundleVersion(b); err == nil {
			vi = versionInfo{v: v, ok: true}
			if pv, err := fbc.BundlePackageProperty(b); err == nil {
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

func (ci *chanIndex) graph() *fbc.Graph {
	if ci.g == nil {
		ci.g = fbc.NewGraph(ci.ch)
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
	sub := &fbc.Channel{Name: ci.ch.Name, Package: ci.ch.Package}
	for _, e := range ci.ch.Entries {
		if keep[e.Name] {
			sub.Entries = append(sub.Entries, e)
		}
	}
	if len(sub.Entries) == 0 {
		return "", errors.New("channel must contain at least one bundle")
	}
	g := fbc.NewGraph(sub)
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
