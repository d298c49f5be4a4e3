package report

import (
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/internal/humanize"
)

// TableRows is the most rows the page shows of a list that grows with the
// run (failures, repositories, every image): a browser opens the page of a
// 20,000-image run in about a second instead of twenty. The rest is counted
// under the table; report.json beside the page and results.json hold all.
const TableRows = 500

// view is what the template shows, computed from a Run.
type view struct {
	*Run
	Total, Failed int
	// Signed and Unsigned count the images whose attachments were looked for.
	Signed, Unsigned int
	FailedImages     []Image
	Repos            []repoRow
	Catalogs         []catalogView
	// Shown are the rows of the long tables the page shows (at most
	// TableRows each), More how many it leaves out.
	Shown shown
	More  struct{ Failed, Repos, Images int }
}

type shown struct {
	Failed, Images []Image
	Repos          []repoRow
}

// firstRows returns at most TableRows of rows and how many it left out.
func firstRows[T any](rows []T) ([]T, int) {
	if len(rows) <= TableRows {
		return rows, 0
	}
	return rows[:TableRows], len(rows) - TableRows
}

type repoRow struct {
	Repo           string
	Images, Failed int
	Bytes          int64
}

type catalogView struct {
	*Catalog
	Packages []packageView
}

type packageView struct {
	*Package
	ImageCount int
	Bytes      int64
	Failed     int
	Graph      template.HTML
}

func newView(r *Run) *view {
	v := &view{Run: r, Total: len(r.Images)}
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
		if im.Failed() {
			row.Failed++
			v.Failed++
			v.FailedImages = append(v.FailedImages, im)
		}
	}
	for _, row := range repos {
		v.Repos = append(v.Repos, *row)
	}
	sort.Slice(v.Repos, func(i, j int) bool { return v.Repos[i].Repo < v.Repos[j].Repo })
	v.Shown.Failed, v.More.Failed = firstRows(v.FailedImages)
	v.Shown.Repos, v.More.Repos = firstRows(v.Repos)
	v.Shown.Images, v.More.Images = firstRows(r.Images)
	for _, c := range r.Catalogs {
		cv := catalogView{Catalog: c}
		for _, p := range c.Packages {
			pv := packageView{Package: p, Graph: inlineSVG(p.Graph)}
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
	"join": strings.Join,
	"short": func(s string) string {
		if i := strings.Index(s, "@sha256:"); i >= 0 && len(s) > i+8+12 {
			return s[:i+8+12] + "…"
		}
		return s
	},
}
