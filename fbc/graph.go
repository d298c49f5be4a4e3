package fbc

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
)

// Graph is the upgrade graph of one channel, with opm's semantics: edges are the
// replaces and skips of the channel's own entries; skipRange does not count.
type Graph struct {
	ch *Channel
	// byName maps an entry name to its index in ch.Entries.
	byName map[string]int
	// incoming counts, per entry name, the edges that point at it.
	incoming map[string]int
	// skipped is the set of names that some entry of the channel skips.
	skipped map[string]bool
	// rev maps an entry to the entries pointing at it; built on first use.
	rev map[string][]string
}

// NewGraph builds the graph of ch.
func NewGraph(ch *Channel) *Graph {
	g := &Graph{
		ch:       ch,
		byName:   make(map[string]int, len(ch.Entries)),
		incoming: make(map[string]int, len(ch.Entries)),
		skipped:  make(map[string]bool),
	}
	for i, e := range ch.Entries {
		if _, dup := g.byName[e.Name]; !dup {
			g.byName[e.Name] = i
		}
	}
	for _, e := range ch.Entries {
		if e.Replaces != "" {
			g.incoming[e.Replaces]++
		}
		for _, s := range e.Skips {
			g.incoming[s]++
			g.skipped[s] = true
		}
	}
	return g
}

// Entry returns the entry named name and whether the channel has it.
func (g *Graph) Entry(name string) (ChannelEntry, bool) {
	i, ok := g.byName[name]
	if !ok {
		return ChannelEntry{}, false
	}
	return g.ch.Entries[i], true
}

// Has reports whether the channel has an entry named name.
func (g *Graph) Has(name string) bool { _, ok := g.byName[name]; return ok }

// Skipped reports whether some entry of the channel skips name.
func (g *Graph) Skipped(name string) bool { return g.skipped[name] }

// Heads returns the names of the entries no other entry replaces or skips, sorted.
// A valid channel has exactly one.
func (g *Graph) Heads() []string {
	var heads []string
	seen := make(map[string]bool, len(g.ch.Entries))
	for _, e := range g.ch.Entries {
		if seen[e.Name] {
			continue
		}
		seen[e.Name] = true
		if g.incoming[e.Name] == 0 {
			heads = append(heads, e.Name)
		}
	}
	sort.Strings(heads)
	return heads
}

// Head returns the single head of the channel, or an error naming the problem
// with opm's wording.
func (g *Graph) Head() (string, error) {
	heads := g.Heads()
	switch len(heads) {
	case 0:
		return "", fmt.Errorf("no channel head found in graph")
	case 1:
		return heads[0], nil
	default:
		return "", fmt.Errorf("multiple channel heads found in graph: %s", strings.Join(heads, ", "))
	}
}

// ReplacesChain follows replaces from head as opm's validateReplacesChain does:
// it stops before a replaced name that some entry skips, or that is not an entry
// of the channel. It returns the chain (head first) and, if the walk came back to
// a name already visited, a cycle error in opm's wording.
func (g *Graph) ReplacesChain(head string) ([]string, error) {
	chain := []string{head}
	visited := map[string]bool{head: true}
	cur := head
	for {
		e, ok := g.Entry(cur)
		if !ok || e.Replaces == "" {
			return chain, nil
		}
		next := e.Replaces
		if g.skipped[next] || !g.Has(next) {
			return chain, nil
		}
		if visited[next] {
			return chain, fmt.Errorf("detected cycle in replaces chain of upgrade graph: %s -> %s", strings.Join(chain, " -> "), next)
		}
		visited[next] = true
		chain = append(chain, next)
		cur = next
	}
}

// Stranded returns, sorted, the entries that are neither on the replaces chain from
// head nor skipped by any entry.
func (g *Graph) Stranded(chain []string) []string {
	on := make(map[string]bool, len(chain))
	for _, n := range chain {
		on[n] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range g.ch.Entries {
		if seen[e.Name] {
			continue
		}
		seen[e.Name] = true
		if !on[e.Name] && !g.skipped[e.Name] {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Channel returns the channel the graph was built from.
func (g *Graph) Channel() *Channel { return g.ch }

// Check runs opm's channel graph rules (exactly one head, no cycle on the replaces
// chain, no stranded entry) and returns the first broken one, with opm's wording.
func (g *Graph) Check() error {
	head, err := g.Head()
	if err != nil {
		return err
	}
	chain, err := g.ReplacesChain(head)
	if err != nil {
		return err
	}
	if stranded := g.Stranded(chain); len(stranded) > 0 {
		return fmt.Errorf("channel contains one or more stranded bundles: %s", strings.Join(stranded, ", "))
	}
	return nil
}

// edges returns the entries of the channel that entry name points at with replaces
// or skips (edges to names that are not entries are left out), without duplicates.
func (g *Graph) edges(name string) []string {
	e, ok := g.Entry(name)
	if !ok {
		return nil
	}
	var out []string
	add := func(n string) {
		if n == "" || !g.Has(n) {
			return
		}
		for _, o := range out {
			if o == n {
				return
			}
		}
		out = append(out, n)
	}
	add(e.Replaces)
	for _, s := range e.Skips {
		add(s)
	}
	return out
}

// Descendants returns, sorted, the entries reachable from name by following
// replaces and skips edges any number of times: everything a cluster running one
// of them can upgrade to name from (skipRange not counted). name itself is not
// included unless it lies on a cycle.
func (g *Graph) Descendants(name string) []string {
	seen := map[string]bool{}
	stack := g.edges(name)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, g.edges(n)...)
	}
	return sortedKeys(seen)
}

// Ancestors returns, sorted, the entries from which name is reachable by
// following replaces and skips edges: the entries between name and the head(s)
// that must be kept for name to stay on a single upgrade graph. name itself is not
// included unless it lies on a cycle.
func (g *Graph) Ancestors(name string) []string {
	rev := g.reverse()
	seen := map[string]bool{}
	stack := append([]string(nil), rev[name]...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, rev[n]...)
	}
	return sortedKeys(seen)
}

// reverse maps an entry name to the entries whose replaces or skips name it.
func (g *Graph) reverse() map[string][]string {
	if g.rev != nil {
		return g.rev
	}
	rev := make(map[string][]string, len(g.byName))
	for n := range g.byName {
		for _, to := range g.edges(n) {
			rev[to] = append(rev[to], n)
		}
	}
	g.rev = rev
	return rev
}

// UpgradesFrom returns, sorted, the entries OLM offers as an upgrade to a cluster
// running bundle name at version v: those that replace it, skip it, or whose
// skipRange contains v (an unparsable skipRange is ignored, as OLM does). Pass a
// nil v to ignore skipRange.
func (g *Graph) UpgradesFrom(name string, v *semver.Version) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range g.ch.Entries {
		if seen[e.Name] || e.Name == name {
			continue
		}
		ok := e.Replaces == name && name != ""
		for _, s := range e.Skips {
			if s == name && name != "" {
				ok = true
			}
		}
		if !ok && v != nil && e.SkipRange != "" {
			if r, err := ParseSkipRange(e.SkipRange); err == nil && r(*v) {
				ok = true
			}
		}
		if ok {
			seen[e.Name] = true
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
