package releasetest

import (
	"testing"
)

// Node is one release of a graph.
type Node struct {
	Version, Payload string
}

// GraphJSON is a Cincinnati graph of channel holding nodes, each updating to
// every later one (serve it with cincinnatitest.Server.Serve).
func GraphJSON(t testing.TB, channel string, nodes ...Node) []byte {
	t.Helper()
	return Graph(channel, nodes...)
}

// Graph is GraphJSON for benchmarks (no test to fail: it cannot fail).
func Graph(channel string, nodes ...Node) []byte {
	type node struct {
		Version  string            `json:"version"`
		Payload  string            `json:"payload"`
		Metadata map[string]string `json:"metadata"`
	}
	doc := struct {
		Nodes []node  `json:"nodes"`
		Edges [][]int `json:"edges"`
	}{Edges: [][]int{}}
	for i, n := range nodes {
		doc.Nodes = append(doc.Nodes, node{Version: n.Version, Payload: n.Payload, Metadata: map[string]string{"io.openshift.upgrades.graph.release.channels": channel}})
		for j := range i {
			doc.Edges = append(doc.Edges, []int{j, i})
		}
	}
	return mustJSON(doc)
}
