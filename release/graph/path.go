package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// adjacency is the updates of one or more graphs by version: from -> the
// versions it updates to, highest first (so that a shortest path prefers the
// newest release, as oc-mirror does).
func adjacency(gs []*Graph, conditional bool) map[string][]string {
	set := map[string]map[string]bool{}
	vers := map[string]semver.Version{}
	link := func(from, to string) {
		if set[from] == nil {
			set[from] = map[string]bool{}
		}
		set[from][to] = true
	}
	for _, g := range gs {
		for i, name := range g.names {
			vers[name] = g.versions[i]
		}
		for _, e := range g.Edges {
			link(g.names[e[0]], g.names[e[1]])
		}
		if !conditional {
			continue
		}
		for _, ce := range g.ConditionalEdges {
			for _, e := range ce.Edges {
				from, to := canonical(e.From), canonical(e.To)
				if _, ok := g.index[from]; !ok {
					continue
				}
				if _, ok := g.index[to]; !ok {
					continue
				}
				link(from, to)
			}
		}
	}
	adj := make(map[string][]string, len(set))
	for from, tos := range set {
		list := make([]string, 0, len(tos))
		for to := range tos {
			list = append(list, to)
		}
		slices.SortFunc(list, func(a, b string) int { return vers[b].Compare(vers[a]) })
		adj[from] = list
	}
	return adj
}

// shortestPath returns the versions of a shortest update path from -> to
// (breadth first, newest neighbours first), both included; nil when there is
// none. from == to is the one-version path.
func shortestPath(adj map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 && !has(prev, to) {
		n := queue[0]
		queue = queue[1:]
		for _, next := range adj[n] {
			if !has(prev, next) {
				prev[next] = n
				queue = append(queue, next)
			}
		}
	}
	if !has(prev, to) {
		return nil
	}
	var path []string
	for v := to; v != ""; v = prev[v] {
		path = append(path, v)
	}
	slices.Reverse(path)
	return path
}

func has(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// join adds the shortest path from the lowest chosen version of the group
// (channels of one type) to the highest, over the group's graphs, and when
// those hold no path, over them and the channels of the minor versions in
// between (prefix-X.Y for each channel prefix of the group).
func (c *chooser) join(typ, arch string, group []picked, chosen map[string]bool) error {
	low, high := group[0], group[0]
	for _, pk := range group[1:] {
		if pk.g.versions[pk.lo].LT(low.g.versions[low.lo]) {
			low = pk
		}
		if pk.g.versions[pk.hi].GT(high.g.versions[high.hi]) {
			high = pk
		}
	}
	from, to := low.g.versions[low.lo], high.g.versions[high.hi]
	if from.EQ(to) {
		return nil
	}
	gs := []*Graph{high.g}
	names := []string{high.channel}
	for _, pk := range group {
		if !slices.Contains(names, pk.channel) {
			gs, names = append(gs, pk.g), append(names, pk.channel)
		}
	}
	path := shortestPath(adjacency(gs, c.o.AllowConditional), from.String(), to.String())
	if path == nil {
		var tried []string
		for _, ch := range intermediate(group, from, to) {
			if slices.Contains(names, ch) {
				continue
			}
			g, err := c.load(typ, ch, arch)
			switch {
			case err != nil:
				tried = append(tried, fmt.Sprintf("%s (%v)", ch, err))
				continue
			case len(g.Nodes) == 0:
				tried = append(tried, ch+" (not served)")
				continue
			}
			tried = append(tried, ch)
			gs, names = append(gs, g), append(names, ch)
		}
		path = shortestPath(adjacency(gs, c.o.AllowConditional), from.String(), to.String())
		if path == nil {
			return fmt.Errorf("%s.channels: no update path joins %s %s to %s %s for %s%s over channels %s (tried the channels in between: %s); %sadd a channel that holds the path, or %s",
				c.o.Field, low.channel, from, high.channel, to, arch, c.overWhich(), strings.Join(names, ", "), orNone(tried), notYet(high, from), c.noPathAdvice(false))
		}
	}
	var added []string
	for _, v := range path {
		if chosen[v] {
			continue
		}
		for k, g := range gs {
			if n, ok := g.index[v]; ok {
				c.add(g, n, names[k], arch, chosen)
				added = append(added, v)
				break
			}
		}
	}
	if len(added) > 0 {
		c.out.Warnings = append(c.out.Warnings, fmt.Sprintf("%s (%s): channels %s joined by the update path %s; versions added: %s",
			arch, typ, strings.Join(names, ", "), strings.Join(path, " -> "), strings.Join(added, ", ")))
	}
	return nil
}

// intermediate names the channels of the minor versions strictly between
// from and to, for each channel-name prefix of the group (eus-4.14 and
// stable-4.16 from 4.14.x to 4.16.y: eus-4.15, stable-4.15).
func intermediate(group []picked, from, to semver.Version) []string {
	var prefixes []string
	for _, pk := range group {
		if i := strings.LastIndex(pk.channel, "-"); i > 0 && !slices.Contains(prefixes, pk.channel[:i]) {
			prefixes = append(prefixes, pk.channel[:i])
		}
	}
	var out []string
	if from.Major != to.Major {
		return nil
	}
	for m := from.Minor + 1; m < to.Minor; m++ {
		for _, p := range prefixes {
			out = append(out, p+"-"+strconv.FormatUint(from.Major, 10)+"."+strconv.FormatUint(m, 10))
		}
	}
	return out
}

// notYet explains a start version the target channel does not hold: no
// update from it to the target minor is published yet.
func notYet(high picked, from semver.Version) string {
	if _, ok := high.g.index[from.String()]; ok {
		return ""
	}
	newest := ""
	for i, v := range high.g.versions {
		if v.Major == from.Major && v.Minor == from.Minor && v.LT(from) && (newest == "" || v.GT(high.g.versions[high.g.index[newest]])) {
			newest = high.g.Nodes[i].Version
		}
	}
	if newest == "" {
		return fmt.Sprintf("%s is not in %s (no update from it is published there); ", from, high.channel)
	}
	return fmt.Sprintf("%s is not in %s yet (no update from it is published there; its newest %d.%d release is %s): set maxVersion to %s, or ", from, high.channel, from.Major, from.Minor, newest, newest)
}
