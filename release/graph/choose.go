package graph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/imageset"
)

// ChooseOptions tune Choose.
type ChooseOptions struct {
	// AllowConditional lets shortest paths (shortestPath, and the paths that
	// join channels) take conditional edges. By default they take only the
	// updates the service recommends to every cluster, as oc-mirror does.
	AllowConditional bool
	// Field is the configuration path of the stanza, for messages (default
	// "mirror.platform"; "delete.platform" for a DeleteImageSetConfiguration).
	Field string
	// File is the configuration file, for messages (file:line).
	File string

	// flags names command-line flags instead of configuration fields (list releases).
	flags bool
}

// DefaultArch is the architecture of a stanza that names none.
const DefaultArch = "amd64"

// MultiArch is the architecture of the multi-architecture payloads, the ones
// a platforms list selects from.
const MultiArch = "multi"

// Archs returns the architectures whose graphs p reads: multi when p lists
// platforms (the only payloads that are indexes), else its architectures,
// else amd64.
func Archs(p *imageset.Platform) []string {
	switch {
	case len(p.Platforms) > 0:
		return []string{MultiArch}
	case len(p.Architectures) > 0:
		return slices.Clone(p.Architectures)
	default:
		return []string{DefaultArch}
	}
}

// Choose reads the graphs of p's channels from f and selects, for each
// architecture (see Archs) and channel:
//   - no minVersion, no maxVersion, not full: the channel's head;
//   - full and no bounds: every version of the channel;
//   - minVersion only: minVersion to the head; maxVersion only: the first
//     version to maxVersion; both: that range (inclusive);
//   - shortestPath: instead of the range, the shortest update path from its
//     lower to its upper end (unconditional edges unless AllowConditional).
//
// Channels of one type are then joined: the shortest path from the lowest
// chosen version to the highest is added, through channels of the minor
// versions in between when the configured ones hold no path (eus-4.14 to
// eus-4.16 through 4.15). A bound the channel does not hold is refused, naming
// the nearest versions. p.Release (a payload named directly) is not handled
// here.
func Choose(ctx context.Context, p *imageset.Platform, f Fetcher, o ChooseOptions) (*Chosen, error) {
	out := &Chosen{Graphs: map[string][]byte{}}
	if p == nil || len(p.Channels) == 0 {
		return out, nil
	}
	if o.Field == "" {
		o.Field = "mirror.platform"
	}
	c := &chooser{ctx: ctx, f: f, o: o, out: out, graphs: map[string]*Graph{}}
	var errs []error
	for _, arch := range Archs(p) {
		if err := c.arch(p, arch); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out.Releases = dedupe(out.Releases)
	slices.SortFunc(out.Risks, func(a, b Risk) int {
		return cmp.Or(cmpVersion(a.From, b.From), cmpVersion(a.To, b.To), strings.Compare(a.Name, b.Name))
	})
	out.Risks = slices.Compact(out.Risks)
	return out, nil
}

type chooser struct {
	ctx    context.Context
	f      Fetcher
	o      ChooseOptions
	out    *Chosen
	graphs map[string]*Graph // by GraphFile name
}

// load fetches, parses and records one graph (once).
func (c *chooser) load(typ, channel, arch string) (*Graph, error) {
	name := GraphFile(typ, arch, channel)
	if g, ok := c.graphs[name]; ok {
		return g, nil
	}
	raw, err := c.f.Fetch(c.ctx, typ, channel, arch)
	if err != nil {
		return nil, err
	}
	g, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("update graph of channel %s (%s) for %s: %w", channel, typ, arch, err)
	}
	c.graphs[name] = g
	c.out.Graphs[name] = raw
	return g, nil
}

// picked is what one channel selected, for joining channels.
type picked struct {
	typ, channel string
	g            *Graph
	lo, hi       int // node indexes of the lowest and highest chosen version
}

func (c *chooser) arch(p *imageset.Platform, arch string) error {
	var errs []error
	var all []picked
	chosen := map[string]bool{} // versions of this arch
	for i, ch := range p.Channels {
		typ := cmp.Or(ch.Type, TypeOCP)
		field := fmt.Sprintf("%s.channels[%d]", c.o.Field, i)
		g, err := c.load(typ, ch.Name, arch)
		if err != nil {
			errs = append(errs, c.located(ch, field, err))
			continue
		}
		if len(g.Nodes) == 0 {
			errs = append(errs, c.located(ch, field+".name", fmt.Errorf("channel %s (%s) has no releases for %s: the update service does not know it, or not for this architecture; check the name (airlock list releases --channels --version X.Y lists them)", ch.Name, typ, arch)))
			continue
		}
		idx, err := c.channel(g, ch, field, arch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pk := picked{typ: typ, channel: ch.Name, g: g, lo: idx[0], hi: idx[0]}
		for _, n := range idx {
			if g.versions[n].LT(g.versions[pk.lo]) {
				pk.lo = n
			}
			if g.versions[n].GT(g.versions[pk.hi]) {
				pk.hi = n
			}
			c.add(g, n, ch.Name, arch, chosen)
		}
		all = append(all, pk)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, typ := range []string{TypeOCP, TypeOKD} {
		var group []picked
		for _, pk := range all {
			if pk.typ == typ {
				group = append(group, pk)
			}
		}
		if len(group) > 1 {
			if err := c.join(typ, arch, group, chosen); err != nil {
				return err
			}
		}
	}
	c.risks(arch, chosen)
	return nil
}

func (c *chooser) add(g *Graph, n int, channel, arch string, chosen map[string]bool) {
	v := g.versions[n].String()
	chosen[v] = true
	c.out.Releases = append(c.out.Releases, Release{Version: v, Channel: channel, Arch: arch, Payload: g.Nodes[n].Payload})
}

// channel selects the node indexes of one channel.
func (c *chooser) channel(g *Graph, ch imageset.ReleaseChannel, field, arch string) ([]int, error) {
	sorted := g.Sorted()
	head := sorted[len(sorted)-1]
	if ch.MinVersion == "" && ch.MaxVersion == "" && !ch.Full {
		return []int{head}, nil
	}
	lo, hi := sorted[0], head
	var errs []error
	if ch.MinVersion != "" {
		n, err := c.bound(g, sorted, ch, field+".minVersion", ch.MinVersion, arch)
		errs = append(errs, err)
		lo = n
	}
	if ch.MaxVersion != "" {
		n, err := c.bound(g, sorted, ch, field+".maxVersion", ch.MaxVersion, arch)
		errs = append(errs, err)
		hi = n
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if g.versions[lo].GT(g.versions[hi]) {
		return nil, c.located(ch, field+".minVersion", fmt.Errorf("minVersion %s is above maxVersion %s; swap them", g.Nodes[lo].Version, g.Nodes[hi].Version))
	}
	if ch.ShortestPath {
		path := shortestPath(adjacency([]*Graph{g}, c.o.AllowConditional), g.versions[lo].String(), g.versions[hi].String())
		if path == nil {
			return nil, c.located(ch, field+".shortestPath", fmt.Errorf("channel %s for %s has no update path from %s to %s%s; %s",
				ch.Name, arch, g.Nodes[lo].Version, g.Nodes[hi].Version, c.overWhich(), c.noPathAdvice(true)))
		}
		out := make([]int, len(path))
		for i, v := range path {
			out[i], _ = g.Lookup(v)
		}
		return out, nil
	}
	var out []int
	for _, n := range sorted {
		if !g.versions[n].LT(g.versions[lo]) && !g.versions[n].GT(g.versions[hi]) {
			out = append(out, n)
		}
	}
	return out, nil
}

// bound finds a minVersion or maxVersion in the channel.
func (c *chooser) bound(g *Graph, sorted []int, ch imageset.ReleaseChannel, field, v, arch string) (int, error) {
	want, err := semver.Parse(v)
	if err != nil {
		return 0, c.located(ch, field, fmt.Errorf("%q is not a semantic version (%v); write a full version such as 4.16.3", v, err))
	}
	if n, ok := g.Lookup(v); ok {
		return n, nil
	}
	below, above := "none", "none"
	for _, n := range sorted {
		if g.versions[n].LT(want) {
			below = g.Nodes[n].Version
		} else if above == "none" {
			above = g.Nodes[n].Version
		}
	}
	return 0, c.located(ch, field, fmt.Errorf("version %s is not in channel %s for %s (nearest: %s below, %s above); use a version the channel holds (airlock list releases --channel %s lists them)",
		v, ch.Name, arch, below, above, ch.Name))
}

func (c *chooser) overWhich() string {
	if c.o.AllowConditional {
		return ""
	}
	return " over the updates recommended to every cluster (conditional updates not taken)"
}

// noPathAdvice says what to do when no path was found (for shortestPath
// when dropping it is an option).
func (c *chooser) noPathAdvice(shortest bool) string {
	s := "choose other bounds"
	if !c.o.AllowConditional {
		s = "allow conditional updates (--allow-conditional-updates), or " + s
	}
	if shortest {
		s += ", or drop shortestPath to mirror the whole range"
	}
	return s
}

// located prefixes err with file:line: field.
func (c *chooser) located(ch imageset.ReleaseChannel, field string, err error) error {
	if c.o.flags {
		return fmt.Errorf("%s: %w", flagOf(field), err)
	}
	loc := ""
	switch {
	case c.o.File != "" && ch.Line > 0:
		loc = fmt.Sprintf("%s:%d: ", c.o.File, ch.Line)
	case c.o.File != "":
		loc = c.o.File + ": "
	}
	return fmt.Errorf("%s%s: %w", loc, field, err)
}

// risks records every risk of a conditional edge between two chosen versions
// of arch.
func (c *chooser) risks(arch string, chosen map[string]bool) {
	suffix := "-" + arch + "-"
	for name, g := range c.graphs {
		if !strings.Contains(name, suffix) {
			continue
		}
		for _, ce := range g.ConditionalEdges {
			for _, e := range ce.Edges {
				from, to := canonical(e.From), canonical(e.To)
				if !chosen[from] || !chosen[to] {
					continue
				}
				for _, r := range ce.Risks {
					c.out.Risks = append(c.out.Risks, Risk{From: from, To: to, Name: r.Name, Message: r.Message, URL: r.URL})
				}
			}
		}
	}
}

// canonical is v as semver prints it (v itself when it is not one).
func canonical(v string) string {
	if pv, err := semver.Parse(v); err == nil {
		return pv.String()
	}
	return v
}

func cmpVersion(a, b string) int {
	va, ea := semver.Parse(a)
	vb, eb := semver.Parse(b)
	if ea != nil || eb != nil {
		return strings.Compare(a, b)
	}
	return va.Compare(vb)
}

// dedupe sorts releases by architecture and version and keeps the first of
// each version and architecture.
func dedupe(rs []Release) []Release {
	slices.SortStableFunc(rs, func(a, b Release) int {
		return cmp.Or(strings.Compare(a.Arch, b.Arch), cmpVersion(a.Version, b.Version))
	})
	return slices.CompactFunc(rs, func(a, b Release) bool { return a.Arch == b.Arch && a.Version == b.Version })
}

// flagOf is the list releases flag of a configuration field.
func flagOf(field string) string {
	for suffix, flag := range map[string]string{".minVersion": "--min-version", ".maxVersion": "--max-version", ".shortestPath": "--shortest-path"} {
		if strings.HasSuffix(field, suffix) {
			return flag
		}
	}
	return "--channel"
}
