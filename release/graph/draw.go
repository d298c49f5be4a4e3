package graph

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/internal/dotrender"
)

// Picture formats (see dotrender): dot, mmd, svg, png.
const (
	FormatDOT     = dotrender.FormatDOT
	FormatMermaid = dotrender.FormatMermaid
	FormatSVG     = dotrender.FormatSVG
	FormatPNG     = dotrender.FormatPNG
)

// Colours of a picture.
const (
	colorChosen      = "#c8e6c9"
	colorPath        = "#2e7d32"
	colorConditional = "#ef6c00"
	colorOther       = "#9e9e9e"
)

// Picture is the drawing of one channel's update graph: versions as nodes
// in version order, the chosen ones filled green, the chosen path (each
// chosen version to the next chosen one) thick green, conditional updates
// dashed orange and labelled with their risk names, the channel head with a
// double border.
type Picture struct {
	Title string
	nodes []picNode
	edges []picEdge
}

type picNode struct {
	id, version  string
	chosen, head bool
}

type picEdge struct {
	from, to string // node ids
	risks    []string
	path     bool
}

// DrawOptions bound a picture.
type DrawOptions struct {
	// From and To bound the versions drawn (inclusive); empty: from the lowest
	// chosen version of the channel to the highest, or the whole channel when
	// none of it is chosen.
	From, To string
}

// Draw makes the picture of the graph saved as name in c.Graphs (GraphFile),
// with c's releases of that architecture highlighted.
func Draw(c *Chosen, typ, channel, arch string, o DrawOptions) (*Picture, error) {
	name := GraphFile(typ, arch, channel)
	raw, ok := c.Graphs[name]
	if !ok {
		return nil, fmt.Errorf("no graph %s was read for this choice", name)
	}
	g, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	chosen := map[string]bool{}
	for _, r := range c.Releases {
		if r.Arch == arch {
			if _, ok := g.Lookup(r.Version); ok {
				chosen[r.Version] = true
			}
		}
	}
	return draw(g, chosen, fmt.Sprintf("%s %s (%s)", channel, arch, cmpOr(typ, TypeOCP)), o)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func draw(g *Graph, chosen map[string]bool, title string, o DrawOptions) (*Picture, error) {
	lo, hi, err := window(g, chosen, o)
	if err != nil {
		return nil, err
	}
	p := &Picture{Title: title}
	ids := map[string]string{}
	head := -1
	if h := g.Head(); h >= 0 {
		head = h
	}
	var chosenOrder []string
	for _, n := range g.Sorted() {
		v := g.versions[n]
		if v.LT(lo) || v.GT(hi) {
			continue
		}
		id := fmt.Sprintf("n%d", len(p.nodes))
		ids[v.String()] = id
		p.nodes = append(p.nodes, picNode{id: id, version: g.Nodes[n].Version, chosen: chosen[v.String()], head: n == head})
		if chosen[v.String()] {
			chosenOrder = append(chosenOrder, v.String())
		}
	}
	next := map[string]string{}
	for i := 1; i < len(chosenOrder); i++ {
		next[chosenOrder[i-1]] = chosenOrder[i]
	}
	add := func(from, to string, risks []string) {
		a, okA := ids[from]
		b, okB := ids[to]
		if okA && okB {
			p.edges = append(p.edges, picEdge{from: a, to: b, risks: risks, path: next[from] == to})
		}
	}
	for _, e := range g.Edges {
		add(g.versions[e[0]].String(), g.versions[e[1]].String(), nil)
	}
	for _, ce := range g.ConditionalEdges {
		var names []string
		for _, r := range ce.Risks {
			names = append(names, r.Name)
		}
		for _, e := range ce.Edges {
			add(canonical(e.From), canonical(e.To), names)
		}
	}
	return p, nil
}

// window returns the versions a picture spans.
func window(g *Graph, chosen map[string]bool, o DrawOptions) (lo, hi semver.Version, err error) {
	if len(g.Nodes) == 0 {
		return lo, hi, fmt.Errorf("the channel has no releases to draw")
	}
	sorted := g.Sorted()
	lo, hi = g.versions[sorted[0]], g.versions[sorted[len(sorted)-1]]
	first := true
	for _, n := range sorted {
		if chosen[g.versions[n].String()] {
			if first {
				lo, first = g.versions[n], false
			}
			hi = g.versions[n]
		}
	}
	if first || lo.EQ(hi) { // nothing or one version chosen: the whole channel
		lo, hi = g.versions[sorted[0]], g.versions[sorted[len(sorted)-1]]
	}
	for _, b := range []struct {
		s   string
		dst *semver.Version
	}{{o.From, &lo}, {o.To, &hi}} {
		if b.s != "" {
			v, perr := semver.Parse(b.s)
			if perr != nil {
				return lo, hi, fmt.Errorf("%q is not a semantic version: %v", b.s, perr)
			}
			*b.dst = v
		}
	}
	return lo, hi, nil
}

// Write writes the picture in format (FormatDOT, FormatMermaid, FormatSVG or
// FormatPNG).
func (p *Picture) Write(ctx context.Context, w io.Writer, format string) error {
	return dotrender.Render(ctx, w, format, p.WriteDOT, p.WriteMermaid)
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// WriteDOT writes the picture as a Graphviz digraph, versions ranked from
// left to right.
func (p *Picture) WriteDOT(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph %s {\n", dotQuote(p.Title))
	fmt.Fprintf(bw, "  graph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, labelloc=t, label=%s, nodesep=0.2, ranksep=0.3];\n",
		dotQuote(p.Title+"\n"+strings.Join(legend, "\n")))
	bw.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=10];\n")
	bw.WriteString("  edge [fontname=\"Helvetica\", fontsize=8, arrowsize=0.6, color=\"" + colorOther + "\"];\n")
	linked := map[[2]string]bool{}
	for _, e := range p.edges {
		linked[[2]string{e.from, e.to}] = true
	}
	for i, n := range p.nodes {
		attrs := []string{"label=" + dotQuote(n.version)}
		if n.chosen {
			attrs = append(attrs, "fillcolor="+dotQuote(colorChosen), "color="+dotQuote(colorPath))
		}
		if n.head {
			attrs = append(attrs, "peripheries=2", "penwidth=2")
		}
		fmt.Fprintf(bw, "  %s [%s];\n", n.id, strings.Join(attrs, ", "))
		if i > 0 && !linked[[2]string{p.nodes[i-1].id, n.id}] {
			fmt.Fprintf(bw, "  %s -> %s [style=invis];\n", p.nodes[i-1].id, n.id)
		}
	}
	for _, e := range p.edges {
		var attrs []string
		if len(e.risks) > 0 {
			attrs = append(attrs, "style=dashed", "color="+dotQuote(colorConditional), "fontcolor="+dotQuote(colorConditional),
				"label="+dotQuote(strings.Join(e.risks, "\n")), "constraint=false")
		}
		if e.path {
			attrs = append(attrs, "penwidth=3")
			if len(e.risks) == 0 {
				attrs = append(attrs, "color="+dotQuote(colorPath))
			}
		}
		fmt.Fprintf(bw, "  %s -> %s [%s];\n", e.from, e.to, strings.Join(attrs, ", "))
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

var legend = []string{"green: chosen; thick: the chosen path; double border: channel head",
	"dashed orange: conditional update, labelled with its risks"}

// WriteMermaid writes the picture as a Mermaid flowchart: updates "-->",
// conditional updates "-.->" labelled with their risks.
func (p *Picture) WriteMermaid(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("flowchart LR\n")
	fmt.Fprintf(bw, "  %%%% %s: %s\n", p.Title, strings.Join(legend, " · "))
	var chosen, heads []string
	for _, n := range p.nodes {
		fmt.Fprintf(bw, "  %s[\"%s\"]\n", n.id, n.version)
		if n.chosen {
			chosen = append(chosen, n.id)
		}
		if n.head {
			heads = append(heads, n.id)
		}
	}
	var pathLinks, condLinks []string
	for i, e := range p.edges {
		if len(e.risks) > 0 {
			fmt.Fprintf(bw, "  %s -.->|\"%s\"| %s\n", e.from, strings.NewReplacer(`"`, "#quot;").Replace(strings.Join(e.risks, ", ")), e.to)
			condLinks = append(condLinks, fmt.Sprint(i))
		} else {
			fmt.Fprintf(bw, "  %s --> %s\n", e.from, e.to)
		}
		if e.path {
			pathLinks = append(pathLinks, fmt.Sprint(i))
		}
	}
	fmt.Fprintf(bw, "  classDef chosen fill:%s,stroke:%s\n", colorChosen, colorPath)
	bw.WriteString("  classDef head stroke-width:4px\n")
	if len(chosen) > 0 {
		fmt.Fprintf(bw, "  class %s chosen\n", strings.Join(chosen, ","))
	}
	if len(heads) > 0 {
		fmt.Fprintf(bw, "  class %s head\n", strings.Join(heads, ","))
	}
	if len(condLinks) > 0 {
		fmt.Fprintf(bw, "  linkStyle %s stroke:%s\n", strings.Join(condLinks, ","), colorConditional)
	}
	if len(pathLinks) > 0 {
		fmt.Fprintf(bw, "  linkStyle %s stroke:%s,stroke-width:3px\n", strings.Join(pathLinks, ","), colorPath)
	}
	return bw.Flush()
}

// Chosen versions of one architecture in a picture, for tests and reports.
func (p *Picture) Chosen() []string {
	var out []string
	for _, n := range p.nodes {
		if n.chosen {
			out = append(out, n.version)
		}
	}
	return slices.Clip(out)
}

// FormatOf returns the picture format a file name asks for by its extension.
func FormatOf(path string) (string, error) { return dotrender.FormatOf(path) }
