package graph

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Colours and styles shared by the DOT and Mermaid outputs.
const (
	colorKept       = "#c8e6c9"
	colorPruned     = "#eeeeee"
	colorDependency = "#bbdefb"
	colorNone       = "#ffffff"
	colorDeprecated = "#c62828"
	colorSkips      = "#e65100"
	colorSkipRange  = "#1565c0"
	textPruned      = "#757575"
)

// Legend is the key to the pictures, one line for edges and one for nodes.
func (p *Package) Legend() []string {
	nodes := "thick double border: channel head · red: deprecated"
	if p.Colored {
		nodes += " · green: kept · blue: kept as a dependency · grey: pruned"
	}
	return []string{"solid: replaces · dashed orange: skips · dotted blue: skipRange", nodes}
}

// label is the text of a node: the bundle name without the package prefix, its
// version when the name does not show it, and its marks.
func (p *Package) label(n *Node) []string {
	short := func(name string) string { return shortName(p.Name, name) }
	var lines []string
	if n.Collapsed > 0 {
		lines = append(lines, fmt.Sprintf("%d bundles", n.Collapsed), short(n.First)+" … "+short(n.Last))
	} else {
		lines = append(lines, short(n.Name))
		if n.Version != "" && !strings.Contains(n.Name, n.Version) {
			lines = append(lines, n.Version)
		}
	}
	var marks []string
	if n.Head {
		marks = append(marks, "head")
	}
	if n.Deprecated != "" {
		marks = append(marks, "deprecated")
	}
	if n.State == StateDependency {
		marks = append(marks, "dependency")
	}
	if len(marks) > 0 {
		lines = append(lines, "("+strings.Join(marks, ", ")+")")
	}
	return lines
}

// shortName drops what precedes the version in a bundle name: the package name
// ("etcd.v0.9.4" → "v0.9.4"), or any operator name before ".v1…" or ".1…"
// ("clusterkubedescheduleroperator.4.14.0-2023" → "4.14.0-2023").
func shortName(pkg, name string) string {
	if s, ok := strings.CutPrefix(name, pkg+"."); ok && s != "" {
		return s
	}
	for i := 0; i+1 < len(name); i++ {
		if name[i] != '.' {
			continue
		}
		rest := name[i+1:]
		if rest[0] == 'v' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9' || rest[0] >= '0' && rest[0] <= '9' {
			return rest
		}
	}
	return name
}

func (p *Package) tooltip(n *Node) string {
	parts := []string{n.Name}
	if n.State != StateNone {
		parts = append(parts, string(n.State))
	}
	parts = append(parts, n.Reasons...)
	if n.Deprecated != "" {
		parts = append(parts, n.Deprecated)
	}
	return strings.Join(parts, "; ")
}

func channelTitle(c *Channel) string {
	t := "channel " + c.Name
	if c.Default {
		t += " (default)"
	}
	if c.Deprecated != "" {
		t += " (deprecated)"
	}
	if c.Dropped != "" {
		t += " (dropped: " + c.Dropped + ")"
	}
	return t
}

func fill(s State) string {
	switch s {
	case StateKept:
		return colorKept
	case StatePruned:
		return colorPruned
	case StateDependency:
		return colorDependency
	}
	return colorNone
}

// dotQuote quotes s as a DOT string.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// WriteDOT writes p as one Graphviz digraph, one cluster per channel. Node
// identifiers are c<channel index>_n<node index>; nodes are declared in version
// order and consecutive ones are tied by invisible edges, so the layout ranks
// them by version from left to right.
func (p *Package) WriteDOT(w io.Writer) error {
	bw := bufio.NewWriter(w)
	title := "package " + p.Name
	if p.Deprecated != "" {
		title += " (deprecated)"
	}
	fmt.Fprintf(bw, "digraph %s {\n", dotQuote(p.Name))
	fmt.Fprintf(bw, "  graph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, labelloc=t, label=%s, newrank=true, nodesep=0.25, ranksep=0.35];\n", dotQuote(title+"\n"+strings.Join(p.Legend(), "\n")))
	bw.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=10];\n")
	bw.WriteString("  edge [fontname=\"Helvetica\", fontsize=9, arrowsize=0.7];\n")
	for ci, c := range p.Channels {
		id := func(name string) string { return fmt.Sprintf("c%d_%s", ci, c.nodeID(name)) }
		fmt.Fprintf(bw, "  subgraph \"cluster_%d\" {\n", ci)
		style := "rounded"
		if c.Default {
			style = "rounded,bold"
		}
		fmt.Fprintf(bw, "    label=%s; style=%s; color=%s;\n", dotQuote(channelTitle(c)), dotQuote(style), dotQuote(map[bool]string{true: colorDeprecated, false: "#616161"}[c.Deprecated != ""]))
		for _, n := range c.Nodes {
			attrs := []string{"label=" + dotQuote(strings.Join(p.label(n), "\n")), "tooltip=" + dotQuote(p.tooltip(n)), "fillcolor=" + dotQuote(fill(n.State))}
			style := []string{"rounded", "filled"}
			if n.State == StatePruned {
				style = append(style, "dashed")
				attrs = append(attrs, "fontcolor="+dotQuote(textPruned))
			}
			if n.Collapsed > 0 {
				attrs = append(attrs, "shape=box3d")
			}
			if n.Head {
				attrs = append(attrs, "penwidth=2.5", "peripheries=2")
			}
			if n.Deprecated != "" {
				attrs = append(attrs, "color="+dotQuote(colorDeprecated), "fontcolor="+dotQuote(colorDeprecated))
			}
			attrs = append(attrs, "style="+dotQuote(strings.Join(style, ",")))
			fmt.Fprintf(bw, "    %s [%s];\n", id(n.Name), strings.Join(attrs, ", "))
		}
		linked := map[[2]string]bool{}
		for _, e := range c.Edges {
			if e.Kind != EdgeSkipRange { // skipRange edges do not rank (constraint=false)
				linked[[2]string{e.From, e.To}] = true
			}
		}
		for i := 1; i < len(c.Nodes); i++ {
			a, b := c.Nodes[i-1].Name, c.Nodes[i].Name
			if !linked[[2]string{a, b}] {
				fmt.Fprintf(bw, "    %s -> %s [style=invis];\n", id(a), id(b))
			}
		}
		for _, e := range c.Edges {
			var attrs []string
			switch e.Kind {
			case EdgeSkips:
				attrs = append(attrs, "style=dashed", "color="+dotQuote(colorSkips))
			case EdgeSkipRange:
				attrs = append(attrs, "style=dotted", "color="+dotQuote(colorSkipRange), "constraint=false")
			}
			if e.Label != "" {
				attrs = append(attrs, "label="+dotQuote(e.Label), "fontcolor="+dotQuote(colorSkipRange))
			}
			attrs = append(attrs, "tooltip="+dotQuote(string(e.Kind)))
			fmt.Fprintf(bw, "    %s -> %s [%s];\n", id(e.From), id(e.To), strings.Join(attrs, ", "))
		}
		bw.WriteString("  }\n")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// nodeID returns the identifier of the node named name ("" if none).
func (c *Channel) nodeID(name string) string {
	if c.ids == nil {
		c.ids = make(map[string]string, len(c.Nodes))
		for _, n := range c.Nodes {
			c.ids[n.Name] = n.ID
		}
	}
	return c.ids[name]
}

// mermaidText escapes s for a quoted Mermaid label.
func mermaidText(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "\n", "<br/>")
	return r.Replace(s)
}

// WriteMermaid writes p as a Mermaid flowchart, one subgraph per channel:
// replaces "-->", skips "==>" (thick, orange), skipRange "-.->" (dotted, blue).
func (p *Package) WriteMermaid(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("flowchart LR\n")
	fmt.Fprintf(bw, "  %%%% package %s: %s\n", p.Name, strings.Join(p.Legend(), " · "))
	classes := map[string][]string{}
	var order []string
	addClass := func(class, id string) {
		if _, ok := classes[class]; !ok {
			order = append(order, class)
		}
		classes[class] = append(classes[class], id)
	}
	edgeNo := 0
	linkStyles := map[EdgeKind][]int{}
	for ci, c := range p.Channels {
		id := func(name string) string { return fmt.Sprintf("c%d_%s", ci, c.nodeID(name)) }
		fmt.Fprintf(bw, "  subgraph c%d [\"%s\"]\n", ci, mermaidText(channelTitle(c)))
		bw.WriteString("    direction LR\n")
		for _, n := range c.Nodes {
			label := mermaidText(strings.Join(p.label(n), "\n"))
			if n.Collapsed > 0 {
				fmt.Fprintf(bw, "    %s[[\"%s\"]]\n", id(n.Name), label)
			} else {
				fmt.Fprintf(bw, "    %s[\"%s\"]\n", id(n.Name), label)
			}
			if n.State != StateNone {
				addClass(string(n.State), id(n.Name))
			}
			if n.Head {
				addClass("head", id(n.Name))
			}
			if n.Deprecated != "" {
				addClass("deprecated", id(n.Name))
			}
		}
		for _, e := range c.Edges {
			switch e.Kind {
			case EdgeReplaces:
				fmt.Fprintf(bw, "    %s --> %s\n", id(e.From), id(e.To))
			case EdgeSkips:
				fmt.Fprintf(bw, "    %s ==>|skips| %s\n", id(e.From), id(e.To))
			case EdgeSkipRange:
				if e.Label != "" {
					fmt.Fprintf(bw, "    %s -.->|\"%s\"| %s\n", id(e.From), mermaidText(e.Label), id(e.To))
				} else {
					fmt.Fprintf(bw, "    %s -.-> %s\n", id(e.From), id(e.To))
				}
			}
			linkStyles[e.Kind] = append(linkStyles[e.Kind], edgeNo)
			edgeNo++
		}
		bw.WriteString("  end\n")
	}
	fmt.Fprintf(bw, "  classDef kept fill:%s,stroke:#2e7d32\n", colorKept)
	fmt.Fprintf(bw, "  classDef pruned fill:%s,stroke:#9e9e9e,color:%s,stroke-dasharray:4 3\n", colorPruned, textPruned)
	fmt.Fprintf(bw, "  classDef dependency fill:%s,stroke:#1565c0\n", colorDependency)
	bw.WriteString("  classDef head stroke-width:4px\n")
	fmt.Fprintf(bw, "  classDef deprecated stroke:%s,color:%s\n", colorDeprecated, colorDeprecated)
	for _, class := range order {
		fmt.Fprintf(bw, "  class %s %s\n", strings.Join(classes[class], ","), class)
	}
	for _, k := range []EdgeKind{EdgeSkips, EdgeSkipRange} {
		if idx := linkStyles[k]; len(idx) > 0 {
			color := colorSkips
			if k == EdgeSkipRange {
				color = colorSkipRange
			}
			s := make([]string, len(idx))
			for i, n := range idx {
				s[i] = fmt.Sprint(n)
			}
			fmt.Fprintf(bw, "  linkStyle %s stroke:%s\n", strings.Join(s, ","), color)
		}
	}
	return bw.Flush()
}
