package report

import (
	"fmt"
	"html/template"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/internal/humanize"
)

// view is what the template shows, computed from a Run.
type view struct {
	*Run
	Total, Failed int
	// Signed and Unsigned count the images whose attachments were looked for.
	Signed, Unsigned int
	Catalogs         []catalogView
	// The long tables: what failed, the destination repositories, every image.
	Failures, Repos, Every *longTable
	// Script is the page's one script, ScriptHash its hash for the
	// Content-Security-Policy.
	Script     template.JS
	ScriptHash string
}

type repoRow struct {
	Repo           string
	Images, Failed int
	Bytes          int64
}

type catalogView struct {
	*Catalog
	Packages []packageView
	// Table is the catalog's packages, a row each.
	Table *longTable
}

type packageView struct {
	*Package
	ImageCount int
	Bytes      int64
	Failed     int
	Graph      template.HTML
	// Section is true when the package has a section of its own under the
	// catalog's table (an upgrade graph, more bundles than its row tells,
	// dropped channels); Anchor names it.
	Section bool
	Anchor  string
}

// inlineBundles is how many kept bundles a package's row names with why;
// a package keeping more has a section of its own with every one.
const inlineBundles = 3

// why is the package row's account of the bundles kept and why.
func (p packageView) why() string {
	var parts []string
	for i, b := range p.Bundles {
		if i == inlineBundles {
			parts = append(parts, fmt.Sprintf("and %d more (below)", len(p.Bundles)-inlineBundles))
			break
		}
		var reasons []string
		for _, r := range b.Reasons {
			reasons = append(reasons, r.String())
		}
		s := b.Name
		if b.Version != "" {
			s += " " + b.Version
		}
		if len(reasons) > 0 {
			s += ": " + strings.Join(reasons, "; ")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}

func newView(r *Run) *view {
	v := &view{Run: r, Total: len(r.Images), Script: template.JS(pagerScript), ScriptHash: scriptHash} // #nosec: a constant
	v.Failures = &longTable{ID: "t-failures", What: "failures", Also: "results.json", Head: []string{"image", "destination", "status", "why"}, Kinds: []string{"code", "code", "", ""}}
	v.Every = &longTable{ID: "t-images", What: "images", Also: "results.json", Head: []string{"source", "kind", "destination", "status", "signature", "bytes sent"},
		Kinds: []string{"code", "", "code", "", "", "n"}}
	bySource := map[string][]Image{}
	repos := map[string]*repoRow{}
	for _, im := range r.Images {
		bySource[im.Source] = append(bySource[im.Source], im)
		row := repos[im.DestRepo]
		if row == nil {
			row = &repoRow{Repo: im.DestRepo}
			repos[im.DestRepo] = row
		}
		row.Images++
		row.Bytes += im.Bytes
		switch im.Signature {
		case "signed":
			v.Signed++
		case "unsigned":
			v.Unsigned++
		}
		var bad uint32
		if im.Failed() {
			row.Failed++
			v.Failed++
			v.Failures.Rows = append(v.Failures.Rows, tableRow{Cells: []string{im.Source, im.Destination, im.Status, im.Error}, Bad: 1 << 2})
			bad |= 1 << 3
		}
		if im.Signature == "unsigned" {
			bad |= 1 << 4
		}
		v.Every.Rows = append(v.Every.Rows, tableRow{Cells: []string{short(im.Source), im.Kind, short(im.Destination), im.Status, im.SignatureNote(), humanize.Bytes(im.Bytes)}, Bad: bad})
	}
	var rows []repoRow
	for _, row := range repos {
		rows = append(rows, *row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Repo < rows[j].Repo })
	v.Repos = &longTable{ID: "t-repositories", What: "repositories", Head: []string{"repository", "images", "bytes sent", "failed"}, Kinds: []string{"code", "n", "n", "n"}}
	for _, row := range rows {
		tr := tableRow{Cells: []string{row.Repo, strconv.Itoa(row.Images), humanize.Bytes(row.Bytes), strconv.Itoa(row.Failed)}}
		if row.Failed > 0 {
			tr.Bad = 1 << 3
		}
		v.Repos.Rows = append(v.Repos.Rows, tr)
	}
	for ci, c := range r.Catalogs {
		cv := catalogView{Catalog: c, Table: &longTable{ID: fmt.Sprintf("t-catalog-%d", ci), What: "packages",
			Head:  []string{"package", "default channel", "channels kept", "bundles kept", "images", "bytes sent", "failed", "kept, and why"},
			Kinds: []string{"", "", "n", "n", "n", "n", "n", ""}}}
		for _, p := range c.Packages {
			pv := packageView{Package: p, Graph: inlineSVG(p.Graph), Anchor: fmt.Sprintf("pkg-%d-%s", ci, p.Name)}
			pv.Section = pv.Graph != "" || len(p.Bundles) > inlineBundles || len(p.Dropped) > 0
			for _, src := range p.Images {
				ims := bySource[src]
				if len(ims) == 0 {
					continue
				}
				pv.ImageCount++
				for _, im := range ims {
					pv.Bytes += im.Bytes
					if im.Failed() {
						pv.Failed++
					}
				}
			}
			cv.Packages = append(cv.Packages, pv)
			tr := tableRow{Cells: []string{p.Name, p.DefaultChannel, strconv.Itoa(len(p.Channels)), strconv.Itoa(len(p.Bundles)), strconv.Itoa(pv.ImageCount),
				humanize.Bytes(pv.Bytes), strconv.Itoa(pv.Failed), pv.why()}}
			if pv.Section {
				tr.Link = "#" + pv.Anchor
			}
			if p.Dependency {
				tr.Suffix = "(dependency)"
			}
			if pv.Failed > 0 {
				tr.Bad = 1 << 6
			}
			cv.Table.Rows = append(cv.Table.Rows, tr)
		}
		v.Catalogs = append(v.Catalogs, cv)
	}
	return v
}

// inlineSVG makes Graphviz's SVG document fit inside HTML: the XML prolog,
// DOCTYPE and comments go (the DOCTYPE names a DTD on the internet).
func inlineSVG(s string) template.HTML {
	i := strings.Index(s, "<svg")
	if i < 0 {
		return ""
	}
	return template.HTML(s[i:]) // #nosec: SVG written by Graphviz from escaped DOT
}

var funcs = template.FuncMap{
	"bytes": humanize.Bytes,
	"svg":   inlineSVG,
	"dur": func(d time.Duration) string {
		switch {
		case d >= time.Second:
			return d.Round(10 * time.Millisecond).String()
		case d >= time.Millisecond:
			return d.Round(time.Millisecond).String()
		}
		return d.String()
	},
	"join":  strings.Join,
	"short": short,
}

// short cuts the digest of a reference to its first 12 hex digits.
func short(s string) string {
	if i := strings.Index(s, "@sha256:"); i >= 0 && len(s) > i+8+12 {
		return s[:i+8+12] + "…"
	}
	return s
}
