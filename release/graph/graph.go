// Package graph reads OpenShift update graphs (the Cincinnati protocol) and
// chooses the release versions a mirror.platform stanza asks for: channel
// heads, version ranges, whole channels, shortest update paths and the paths
// that join channels of several minor versions (EUS to EUS).
//
// It is an engine: it knows no registry, no copying and no workflow. The graphs
// it reads come through a Fetcher: the update service (NewClient), or the
// graphs a previous run saved (Offline).
package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/blang/semver/v4"
)

// Release is one chosen release payload.
type Release struct {
	Version string `json:"version"`
	Channel string `json:"channel"`
	// Arch is amd64, arm64, ppc64le, s390x or multi.
	Arch string `json:"arch"`
	// Payload is the node's pull spec, by digest.
	Payload string `json:"payload"`
}

// Risk is one risk of a conditional edge (an update the service recommends
// only to clusters that do not match the risk's rules) between two chosen
// versions.
type Risk struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Name    string `json:"name"`
	Message string `json:"message,omitempty"`
	URL     string `json:"url,omitempty"`
}

// Chosen is what Choose selected.
type Chosen struct {
	// Releases are sorted by architecture then version, one per version and
	// architecture.
	Releases []Release
	// Risks are the conditional edges between two chosen versions (taken or
	// skipped by the chosen path), one entry per risk, sorted.
	Risks []Risk
	// Graphs are the graphs read, raw as served, by GraphFile name. Saved in
	// the workspace and the archive, they let Offline choose again.
	Graphs map[string][]byte
	// Warnings are things the user should know that did not stop the choice.
	Warnings []string
}

// Channel types.
const (
	TypeOCP = "ocp"
	TypeOKD = "okd"
)

// GraphFile is the file name of the graph of channel for arch in Chosen.Graphs.
func GraphFile(typ, arch, channel string) string {
	if typ == "" {
		typ = TypeOCP
	}
	return typ + "-" + arch + "-" + channel + ".json"
}

// Graph is an update graph as the Cincinnati protocol serves it.
type Graph struct {
	Nodes            []Node            `json:"nodes"`
	Edges            [][]int           `json:"edges"`
	ConditionalEdges []ConditionalEdge `json:"conditionalEdges,omitempty"`

	versions []semver.Version // parsed Nodes[i].Version
	names    []string         // versions[i].String()
	index    map[string]int   // version string -> node index
}

// Node is one release of a graph.
type Node struct {
	Version  string            `json:"version"`
	Payload  string            `json:"payload"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// ConditionalEdge is a set of updates recommended only where its risks do
// not apply.
type ConditionalEdge struct {
	Edges []EdgeRef `json:"edges"`
	Risks []RiskDef `json:"risks"`
}

// EdgeRef names an update by its versions.
type EdgeRef struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// RiskDef is a risk as served, its matching rules kept raw.
type RiskDef struct {
	URL           string            `json:"url"`
	Name          string            `json:"name"`
	Message       string            `json:"message"`
	MatchingRules []json.RawMessage `json:"matchingRules,omitempty"`
}

// MaxGraphBytes is the largest graph read (the biggest channels served today
// are a few MiB).
const MaxGraphBytes = 64 << 20

// ErrInvalidGraph marks a graph that is not a usable Cincinnati answer.
var ErrInvalidGraph = errors.New("invalid update graph")

// Parse reads a Cincinnati graph: every node has a semantic version (listed
// once) and a payload, and every edge joins two nodes. Conditional edges that
// name versions the graph does not hold are kept but never chosen.
func Parse(data []byte) (*Graph, error) {
	if len(data) > MaxGraphBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrInvalidGraph, len(data), MaxGraphBytes)
	}
	var g Graph
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("%w: not Cincinnati JSON: %v", ErrInvalidGraph, err)
	}
	if g.Nodes == nil {
		return nil, fmt.Errorf("%w: no \"nodes\" list (is this an update service answer?)", ErrInvalidGraph)
	}
	g.versions = make([]semver.Version, len(g.Nodes))
	g.names = make([]string, len(g.Nodes))
	g.index = make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		v, err := semver.Parse(n.Version)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: version %q is not a semantic version: %v", ErrInvalidGraph, i, n.Version, err)
		}
		if n.Payload == "" {
			return nil, fmt.Errorf("%w: node %d (version %s) has no payload", ErrInvalidGraph, i, n.Version)
		}
		key := v.String()
		if j, dup := g.index[key]; dup {
			return nil, fmt.Errorf("%w: version %s is listed twice (nodes %d and %d)", ErrInvalidGraph, key, j, i)
		}
		g.versions[i] = v
		g.names[i] = key
		g.index[key] = i
	}
	for k, e := range g.Edges {
		if len(e) != 2 {
			return nil, fmt.Errorf("%w: edge %d has %d ends, want 2", ErrInvalidGraph, k, len(e))
		}
		for _, end := range e {
			if end < 0 || end >= len(g.Nodes) {
				return nil, fmt.Errorf("%w: edge %d names node %d, but the graph has %d nodes", ErrInvalidGraph, k, end, len(g.Nodes))
			}
		}
	}
	for k, ce := range g.ConditionalEdges {
		for _, r := range ce.Risks {
			if r.Name == "" {
				return nil, fmt.Errorf("%w: conditional edge %d has a risk without a name", ErrInvalidGraph, k)
			}
		}
	}
	return &g, nil
}

// Version is the parsed version of node i.
func (g *Graph) Version(i int) semver.Version { return g.versions[i] }

// Lookup returns the index of the node of version v.
func (g *Graph) Lookup(v string) (int, bool) {
	if pv, err := semver.Parse(v); err == nil {
		v = pv.String()
	}
	i, ok := g.index[v]
	return i, ok
}

// Sorted returns the node indexes in ascending version order.
func (g *Graph) Sorted() []int {
	idx := make([]int, len(g.Nodes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return g.versions[a].Compare(g.versions[b]) })
	return idx
}

// Head returns the index of the highest version, or -1 for an empty graph.
func (g *Graph) Head() int {
	best := -1
	for i := range g.Nodes {
		if best < 0 || g.versions[i].GT(g.versions[best]) {
			best = i
		}
	}
	return best
}
