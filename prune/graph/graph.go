// Package graph draws the upgrade graph of a package of a file-based catalog:
// bundles as nodes ordered by version, replaces, skips and skipRange edges drawn
// differently, channel heads, the default channel and deprecated bundles marked
// and, given what prune.Filter explained, the bundles a configuration keeps, prunes
// or pulls in as dependencies. It writes Graphviz DOT and Mermaid text itself and
// lays pictures out (SVG, PNG) with Graphviz through github.com/goccy/go-graphviz.
// Like prune, it knows nothing about registries.
package graph

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/prune"
)

// State is what a configuration does to a bundle.
type State string

// States of a node. StateNone is used when no configuration was given.
const (
	StateNone       State = ""
	StateKept       State = "kept"
	StatePruned     State = "pruned"
	StateDependency State = "dependency"
)

// EdgeKind is the kind of an upgrade edge.
type EdgeKind string

// Edge kinds.
const (
	EdgeReplaces  EdgeKind = "replaces"
	EdgeSkips     EdgeKind = "skips"
	EdgeSkipRange EdgeKind = "skipRange"
)

// Options say what to draw.
type Options struct {
	// Package is the package to draw (required).
	Package string
	// Channel restricts the picture to one channel ("" draws every channel).
	Channel string
	// Explanation, when set, colours bundles kept, pruned or kept as dependencies
	// (what prune.Filter returned for the same catalog).
	Explanation *prune.Explanation
	// Collapse is the shortest run of plain replaces links folded into one node
	// (0: DefaultCollapse; negative: never collapse).
	Collapse int
	// RangeTargets is the most skipRange edges drawn to one entry; beyond it
	// only the oldest bundle in range gets an edge, labelled with the count
	// (0: DefaultRangeTargets).
	RangeTargets int
}

// Defaults of Options.
const (
	DefaultCollapse     = 5
	DefaultRangeTargets = 4
)

// Package is the picture of one package: one Channel per drawn channel.
type Package struct {
	Name           string
	DefaultChannel string
	// Deprecated is the package's deprecation message, if any.
	Deprecated string
	// Colored is true when an explanation coloured the nodes.
	Colored  bool
	Channels []*Channel
}

// Channel is the upgrade graph of one channel.
type Channel struct {
	Name       string
	Default    bool
	Deprecated string
	// Dropped says why a configuration dropped the whole channel ("" if kept).
	Dropped string
	// Nodes are ordered by version (unparsable versions last, by name).
	Nodes []*Node
	Edges []Edge

	ids map[string]string // node name -> ID, built on first use
}

// Node is a bundle, or a run of collapsed bundles.
type Node struct {
	ID         string
	Name       string
	Version    string
	Head       bool
	Deprecated string
	State      State
	// Reasons says why the configuration kept the bundle.
	Reasons []string
	// Collapsed counts the bundles folded into this node (0 for a plain
	// bundle); Name is then "FIRST … LAST", First and Version name the oldest
	// bundle, Last and LastVersion the newest.
	Collapsed   int
	First       string
	Last        string
	LastVersion string
}

// Edge is an upgrade edge, drawn from the older bundle to the one that upgrades it.
type Edge struct {
	From, To string
	Kind     EdgeKind
	// Label is the skipRange on the first edge a range draws.
	Label string
}

// Build makes the picture of opts.Package of c.
func Build(c *fbc.Catalog, opts Options) (*Package, error) {
	if opts.Package == "" {
		return nil, fmt.Errorf("no package given: pass --package NAME")
	}
	var pkg *fbc.Package
	for _, p := range c.Packages {
		if p.Name == opts.Package {
			pkg = p
			break
		}
	}
	if pkg == nil {
		var names []string
		for _, p := range c.Packages {
			names = append(names, p.Name)
		}
		return nil, fmt.Errorf("the catalog has no package %q (it has %d: %s)", opts.Package, len(names), abbreviate(names, 10))
	}
	if opts.Collapse == 0 {
		opts.Collapse = DefaultCollapse
	}
	if opts.RangeTargets <= 0 {
		opts.RangeTargets = DefaultRangeTargets
	}
	dep := deprecations(pkg)
	out := &Package{Name: pkg.Name, DefaultChannel: pkg.DefaultChannel, Deprecated: dep.pkg, Colored: opts.Explanation != nil}
	var pe *prune.PackageExplanation
	if opts.Explanation != nil {
		pe = opts.Explanation.Package(pkg.Name)
	}
	bundles := make(map[string]*fbc.Bundle, len(pkg.Bundles))
	for _, b := range pkg.Bundles {
		bundles[b.Name] = b
	}
	found := false
	for _, ch := range pkg.Channels {
		if opts.Channel != "" && ch.Name != opts.Channel {
			continue
		}
		found = true
		gc := buildChannel(ch, bundles, dep, pe, opts)
		gc.Default = ch.Name == pkg.DefaultChannel
		gc.Deprecated = dep.channels[ch.Name]
		out.Channels = append(out.Channels, gc)
	}
	if !found {
		var names []string
		for _, ch := range pkg.Channels {
			names = append(names, ch.Name)
		}
		return nil, fmt.Errorf("package %q has no channel %q (channels: %s)", pkg.Name, opts.Channel, strings.Join(names, ", "))
	}
	return out, nil
}

type pkgDeprecations struct {
	pkg      string
	channels map[string]string
	bundles  map[string]string
}

func deprecations(p *fbc.Package) pkgDeprecations {
	d := pkgDeprecations{channels: map[string]string{}, bundles: map[string]string{}}
	for _, dd := range p.Deprecations {
		for _, e := range dd.Entries {
			msg := strings.TrimSpace(e.Message)
			if msg == "" {
				msg = "deprecated"
			}
			switch e.Reference.Schema {
			case fbc.SchemaPackage:
				d.pkg = msg
			case fbc.SchemaChannel:
				d.channels[e.Reference.Name] = msg
			case fbc.SchemaBundle:
				d.bundles[e.Reference.Name] = msg
			}
		}
	}
	for _, b := range p.Bundles {
		for _, pr := range b.Properties {
			if pr.Type == fbc.PropertyDeprecated && d.bundles[b.Name] == "" {
				d.bundles[b.Name] = "deprecated (olm.deprecated property)"
			}
		}
	}
	return d
}

type versioned struct {
	v  semver.Version
	ok bool
}

func buildChannel(ch *fbc.Channel, bundles map[string]*fbc.Bundle, dep pkgDeprecations, pe *prune.PackageExplanation, opts Options) *Channel {
	g := fbc.NewGraph(ch)
	heads := map[string]bool{}
	for _, h := range g.Heads() {
		heads[h] = true
	}
	out := &Channel{Name: ch.Name}
	kept := map[string]bool{}
	if opts.Explanation != nil && pe == nil {
		out.Dropped = "the configuration does not keep this package"
	}
	if pe != nil {
		for _, c := range pe.Channels {
			if c.Name == ch.Name {
				for _, n := range c.Entries {
					kept[n] = true
				}
			}
		}
		for _, d := range pe.Dropped {
			if d.Name == ch.Name {
				out.Dropped = d.Reason
			}
		}
		if len(kept) == 0 && out.Dropped == "" {
			out.Dropped = "not selected by the configuration"
		}
	}
	vers := map[string]versioned{}
	seen := map[string]bool{}
	for _, e := range ch.Entries {
		if seen[e.Name] {
			continue
		}
		seen[e.Name] = true
		n := &Node{Name: e.Name, Head: heads[e.Name], Deprecated: dep.bundles[e.Name]}
		var vv versioned
		if b := bundles[e.Name]; b != nil {
			if v, err := fbc.BundleVersion(b); err == nil {
				vv = versioned{v, true}
				n.Version = v.String()
			}
		}
		vers[e.Name] = vv
		n.State, n.Reasons = nodeState(e.Name, ch.Name, kept, pe, opts.Explanation != nil)
		out.Nodes = append(out.Nodes, n)
	}
	sort.SliceStable(out.Nodes, func(i, j int) bool {
		a, b := vers[out.Nodes[i].Name], vers[out.Nodes[j].Name]
		switch {
		case a.ok && b.ok && !a.v.EQ(b.v):
			return a.v.LT(b.v)
		case a.ok != b.ok:
			return a.ok
		}
		return out.Nodes[i].Name < out.Nodes[j].Name
	})
	has := func(from, to string) bool { return g.Has(from) && g.Has(to) }
	type pair struct{ from, to string }
	linked := map[pair]bool{}
	add := func(e Edge) {
		p := pair{e.From, e.To}
		if linked[p] {
			return
		}
		linked[p] = true
		out.Edges = append(out.Edges, e)
	}
	for _, e := range ch.Entries {
		if e.Replaces != "" && has(e.Replaces, e.Name) {
			add(Edge{From: e.Replaces, To: e.Name, Kind: EdgeReplaces})
		}
		for _, s := range e.Skips {
			if has(s, e.Name) {
				add(Edge{From: s, To: e.Name, Kind: EdgeSkips})
			}
		}
	}
	for _, e := range ch.Entries {
		if e.SkipRange == "" {
			continue
		}
		r, err := fbc.ParseSkipRange(e.SkipRange)
		if err != nil {
			continue
		}
		var targets []string
		for _, n := range out.Nodes { // by version
			vv := vers[n.Name]
			if n.Name != e.Name && vv.ok && r(vv.v) && !linked[pair{n.Name, e.Name}] {
				targets = append(targets, n.Name)
			}
		}
		label := e.SkipRange
		if len(targets) > opts.RangeTargets {
			// One edge from the oldest bundle in range stands for all of them.
			label = fmt.Sprintf("%s (%d bundles)", e.SkipRange, len(targets))
			targets = targets[:1]
		}
		for i, t := range targets {
			ed := Edge{From: t, To: e.Name, Kind: EdgeSkipRange}
			if i == 0 {
				ed.Label = label
			}
			add(ed)
		}
	}
	if opts.Collapse > 0 {
		collapse(out, opts.Collapse)
	}
	for i, n := range out.Nodes {
		n.ID = fmt.Sprintf("n%d", i)
	}
	return out
}

func nodeState(name, channel string, kept map[string]bool, pe *prune.PackageExplanation, colored bool) (State, []string) {
	if !colored {
		return StateNone, nil
	}
	if pe == nil || !kept[name] {
		return StatePruned, nil
	}
	be := pe.Bundle(name)
	var reasons []string
	onlyDep := pe.Dependency
	if be != nil {
		onlyDep = true
		for _, r := range be.Reasons {
			if r.Channel != "" && r.Channel != channel {
				continue
			}
			reasons = append(reasons, r.String())
			if r.Kind != prune.ReasonDependency {
				onlyDep = false
			}
		}
		if len(reasons) == 0 {
			onlyDep = pe.Dependency
		}
	}
	if onlyDep {
		return StateDependency, reasons
	}
	return StateKept, reasons
}

// collapse folds runs of at least min bundles that are linked only by replaces,
// one after the other, with nothing else going in or out, the same state, and
// no head or deprecated bundle among them.
func collapse(c *Channel, min int) {
	// skipRange edges do not make a bundle less plain: they are redirected to
	// the collapsed node below.
	in := map[string][]int{}
	out := map[string][]int{}
	for i, e := range c.Edges {
		if e.Kind == EdgeSkipRange {
			continue
		}
		out[e.From] = append(out[e.From], i)
		in[e.To] = append(in[e.To], i)
	}
	byName := map[string]*Node{}
	for _, n := range c.Nodes {
		byName[n.Name] = n
	}
	plain := func(n *Node) bool {
		return !n.Head && n.Deprecated == "" && len(in[n.Name]) == 1 && len(out[n.Name]) == 1 &&
			c.Edges[in[n.Name][0]].Kind == EdgeReplaces && c.Edges[out[n.Name][0]].Kind == EdgeReplaces
	}
	next := func(n *Node) *Node { return byName[c.Edges[out[n.Name][0]].To] }
	prev := func(n *Node) *Node { return byName[c.Edges[in[n.Name][0]].From] }
	folded := map[string]string{} // bundle -> the collapsed node it is folded into
	var added []Edge
	for _, n := range c.Nodes {
		if !plain(n) || folded[n.Name] != "" {
			continue
		}
		if p := prev(n); p != nil && plain(p) && p.State == n.State {
			continue // not the start of a run
		}
		run := []*Node{n}
		for cur := n; ; {
			nx := next(cur)
			if nx == nil || !plain(nx) || nx.State != n.State || nx == n {
				break
			}
			run = append(run, nx)
			cur = nx
			if len(run) > len(c.Nodes) {
				break
			}
		}
		if len(run) < min {
			continue
		}
		first, last := run[0], run[len(run)-1]
		cn := &Node{Name: first.Name + " … " + last.Name, Version: first.Version, State: first.State,
			Collapsed: len(run), First: first.Name, Last: last.Name, LastVersion: last.Version, Reasons: first.Reasons}
		for _, r := range run {
			folded[r.Name] = cn.Name
		}
		// Keep the edge into the first bundle and the edge out of the last one.
		inEdge, outEdge := c.Edges[in[first.Name][0]], c.Edges[out[last.Name][0]]
		added = append(added, Edge{From: inEdge.From, To: cn.Name, Kind: EdgeReplaces}, Edge{From: cn.Name, To: outEdge.To, Kind: EdgeReplaces})
		// The collapsed node takes the place of the first bundle, so the
		// version order holds.
		for i, x := range c.Nodes {
			if x == first {
				c.Nodes[i] = cn
			}
		}
	}
	if len(folded) == 0 {
		return
	}
	var nodes []*Node
	for _, n := range c.Nodes {
		if n.Collapsed == 0 && folded[n.Name] != "" {
			continue
		}
		nodes = append(nodes, n)
	}
	c.Nodes = nodes
	edges := added
	seen := map[[2]string]bool{}
	for _, e := range added {
		seen[[2]string{e.From, e.To}] = true
	}
	for _, e := range c.Edges {
		if e.Kind != EdgeSkipRange && (folded[e.From] != "" || folded[e.To] != "") {
			continue
		}
		if f := folded[e.From]; f != "" {
			e.From = f
		}
		if t := folded[e.To]; t != "" {
			e.To = t
		}
		k := [2]string{e.From, e.To}
		if e.From == e.To || seen[k] {
			continue
		}
		seen[k] = true
		edges = append(edges, e)
	}
	c.Edges = edges
}

func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", … and %d more", len(names)-n)
}
