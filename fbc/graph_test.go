package fbc

import (
	"reflect"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

// ch builds a channel from compact entry specs: "name" or "name<replaced" with
// optional "|skip1,skip2" and "@range".
func ch(specs ...string) *Channel {
	c := &Channel{Name: "stable", Package: "p"}
	for _, s := range specs {
		var e ChannelEntry
		if i := strings.Index(s, "@"); i >= 0 {
			e.SkipRange = s[i+1:]
			s = s[:i]
		}
		if i := strings.Index(s, "|"); i >= 0 {
			e.Skips = strings.Split(s[i+1:], ",")
			s = s[:i]
		}
		if i := strings.Index(s, "<"); i >= 0 {
			e.Replaces = s[i+1:]
			s = s[:i]
		}
		e.Name = s
		c.Entries = append(c.Entries, e)
	}
	return c
}

func TestGraphCheck(t *testing.T) {
	tests := []struct {
		name    string
		ch      *Channel
		heads   []string
		chain   []string // nil when there is no single head
		wantErr string   // substring; "" means valid
	}{
		{"single entry", ch("a"), []string{"a"}, []string{"a"}, ""},
		{"single entry dangling replaces and skips", ch("a<z|y,x@<1.0.0"), []string{"a"}, []string{"a"}, ""},
		{"single entry replaces itself", ch("a<a"), nil, nil, "no channel head found in graph"},
		{"single entry skips itself", ch("a|a"), nil, nil, "no channel head found in graph"},
		{"linear chain", ch("c<b", "b<a", "a"), []string{"c"}, []string{"c", "b", "a"}, ""},
		{"tail replaces a pruned bundle", ch("c<b", "b<a"), []string{"c"}, []string{"c", "b"}, ""},
		{"two heads", ch("c<a", "b<a", "a"), []string{"b", "c"}, nil, "multiple channel heads found in graph: b, c"},
		{"cycle without head", ch("a<b", "b<a"), nil, nil, "no channel head found in graph"},
		{"cycle below head", ch("c<a", "a<b", "b<a"), []string{"c"}, []string{"c", "a", "b"}, "detected cycle in replaces chain of upgrade graph: c -> a -> b -> a"},
		{"replaces X and skips X stops the walk", ch("c<b|b", "b<a", "a"), []string{"c"}, []string{"c"}, "channel contains one or more stranded bundles: a"},
		{"replaces X and skips X with everything below skipped", ch("c<b|b,a", "b<a", "a"), []string{"c"}, []string{"c"}, ""},
		{"skip of a later chain member stops the walk", ch("d<c|b", "c<b", "b<a", "a"), []string{"d"}, []string{"d", "c"}, "stranded bundles: a"},
		{"skips only", ch("c|a,b", "b", "a"), []string{"c"}, []string{"c"}, ""},
		{"skipRange-only entry is an extra head", ch("b@<2.0.0", "a"), []string{"a", "b"}, nil, "multiple channel heads found in graph: a, b"},
		{"skipRange-only entry below the head is stranded", ch("c<b", "b@<2.0.0", "a"), []string{"a", "c"}, nil, "multiple channel heads"},
		{"stranded side branch", ch("d<c|x", "c<b", "b", "x<y", "y"), []string{"d"}, []string{"d", "c", "b"}, "stranded bundles: y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGraph(tt.ch)
			if got := g.Heads(); !reflect.DeepEqual(got, tt.heads) {
				t.Errorf("Heads() = %v, want %v", got, tt.heads)
			}
			if tt.chain != nil {
				head, err := g.Head()
				if err != nil {
					t.Fatalf("Head: %v", err)
				}
				chain, _ := g.ReplacesChain(head)
				if !reflect.DeepEqual(chain, tt.chain) {
					t.Errorf("ReplacesChain = %v, want %v", chain, tt.chain)
				}
			}
			err := g.Check()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Check = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestGraphAccessors(t *testing.T) {
	c := ch("d<c|x", "c<b", "b<a", "x")
	g := NewGraph(c)
	if g.Channel() != c {
		t.Error("Channel() is not the channel")
	}
	if e, ok := g.Entry("c"); !ok || e.Replaces != "b" {
		t.Errorf("Entry(c) = %+v, %v", e, ok)
	}
	if _, ok := g.Entry("a"); ok {
		t.Error("Entry(a) found a name that is not an entry")
	}
	if !g.Has("x") || g.Has("a") {
		t.Error("Has is wrong")
	}
	if !g.Skipped("x") || g.Skipped("c") {
		t.Error("Skipped is wrong")
	}
}

func TestGraphReachability(t *testing.T) {
	// e -> d -> c -> b (dangling a), e skips x, x -> y.
	g := NewGraph(ch("e<d|x", "d<c", "c<b|zz", "b<a", "x<y", "y"))
	tests := []struct {
		name        string
		descendants []string
		ancestors   []string
	}{
		{"e", []string{"b", "c", "d", "x", "y"}, []string{}},
		{"c", []string{"b"}, []string{"d", "e"}},
		{"y", []string{}, []string{"e", "x"}},
		{"b", []string{}, []string{"c", "d", "e"}},
		{"missing", []string{}, []string{}},
	}
	for _, tt := range tests {
		if got := g.Descendants(tt.name); !reflect.DeepEqual(got, tt.descendants) {
			t.Errorf("Descendants(%s) = %v, want %v", tt.name, got, tt.descendants)
		}
		if got := g.Ancestors(tt.name); !reflect.DeepEqual(got, tt.ancestors) {
			t.Errorf("Ancestors(%s) = %v, want %v", tt.name, got, tt.ancestors)
		}
	}
	// A cycle includes the start.
	cyc := NewGraph(ch("a<b", "b<a"))
	if got := cyc.Descendants("a"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Descendants on a cycle = %v", got)
	}
}

func TestGraphUpgradesFrom(t *testing.T) {
	g := NewGraph(ch("c<b@>=1.0.0 <1.2.0-0", "b<a|z", "d|a@bogus"))
	v := semver.MustParse("1.1.5")
	tests := []struct {
		name string
		v    *semver.Version
		want []string
	}{
		{"a", nil, []string{"b", "d"}},
		{"b", nil, []string{"c"}},
		{"z", nil, []string{"b"}},
		{"q", &v, []string{"c"}},
		{"a", &v, []string{"b", "c", "d"}},
		{"q", nil, nil},
	}
	for _, tt := range tests {
		if got := g.UpgradesFrom(tt.name, tt.v); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("UpgradesFrom(%s, %v) = %v, want %v", tt.name, tt.v, got, tt.want)
		}
	}
}
