package prune

import (
	"fmt"
	"sort"
	"strings"
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
