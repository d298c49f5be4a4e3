package graph

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
)

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"not json", `<html>`, "not Cincinnati JSON"},
		{"no nodes", `{"edges":[]}`, `no "nodes" list`},
		{"bad version", `{"nodes":[{"version":"4.16","payload":"p"}]}`, `version "4.16" is not a semantic version`},
		{"no payload", `{"nodes":[{"version":"4.16.0"}]}`, "has no payload"},
		{"duplicate", `{"nodes":[{"version":"4.16.0","payload":"p"},{"version":"4.16.0","payload":"q"}]}`, "listed twice"},
		{"edge ends", `{"nodes":[{"version":"4.16.0","payload":"p"}],"edges":[[0]]}`, "edge 0 has 1 ends"},
		{"edge out of range", `{"nodes":[{"version":"4.16.0","payload":"p"}],"edges":[[0,1]]}`, "names node 1, but the graph has 1 nodes"},
		{"negative edge", `{"nodes":[{"version":"4.16.0","payload":"p"}],"edges":[[-1,0]]}`, "names node -1"},
		{"risk without name", `{"nodes":[],"conditionalEdges":[{"edges":[{"from":"a","to":"b"}],"risks":[{"url":"u"}]}]}`, "risk without a name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want ErrInvalidGraph containing %q", err, tc.want)
			}
		})
	}
}

func TestParseServed(t *testing.T) {
	raw, err := cincinnatitest.Build("eus-4.16", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != 198 || len(g.ConditionalEdges) == 0 {
		t.Fatalf("%d nodes, %d conditional edges; want the 198 versions of eus-4.16 and its risks", len(g.Nodes), len(g.ConditionalEdges))
	}
	head := g.Nodes[g.Head()].Version
	if head != "4.16.68" {
		t.Errorf("head %s, want 4.16.68", head)
	}
	if n, ok := g.Lookup("4.16.68"); !ok || g.Nodes[n].Version != head {
		t.Errorf("Lookup(4.16.68) = %d, %v", n, ok)
	}
}

// FuzzParse: any input is parsed or refused with ErrInvalidGraph, never a
// panic; a parsed graph's edges and lookups stay within its nodes.
func FuzzParse(f *testing.F) {
	raw, err := cincinnatitest.Build("stable-4.15", "amd64")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	for _, ch := range []string{"stable-4.0", "stable-4.15"} {
		b, err := cincinnatitest.OCMirrorFixture(ch, "quay.io", "quay.io/x@sha256:0")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"nodes":[{"version":"1.0.0","payload":"p"},{"version":"1.0.1","payload":"q"}],"edges":[[0,1]],"conditionalEdges":[{"edges":[{"from":"1.0.0","to":"1.0.1"}],"risks":[{"name":"R"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidGraph) {
				t.Fatalf("error %v is not ErrInvalidGraph", err)
			}
			return
		}
		for _, e := range g.Edges {
			_ = g.Nodes[e[0]]
			_ = g.Nodes[e[1]]
		}
		if h := g.Head(); h >= len(g.Nodes) || (h < 0) != (len(g.Nodes) == 0) {
			t.Fatalf("head %d of %d nodes", h, len(g.Nodes))
		}
		for i, n := range g.Nodes {
			if j, ok := g.Lookup(n.Version); !ok || j != i {
				t.Fatalf("Lookup(%q) = %d, %v; want %d", n.Version, j, ok, i)
			}
		}
		_ = shortestPath(adjacency([]*Graph{g}, true), "1.0.0", "1.0.1")
	})
}
