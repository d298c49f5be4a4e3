package pipeline

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/report"
)

// The report's per-catalog view (what was kept of each package and why, with
// its upgrade graph) is made on the connected side, where the source
// catalogs are. A mirror-to-disk batch carries it as an extra file of the
// report, so that disk-to-mirror's report shows the same view.
const (
	reportExtraSource = "report"
	reportExtraName   = "catalogs.json"
	// maxReportExtra bounds the view a batch carries: beyond it the upgrade
	// graphs are left out, and beyond that the view.
	maxReportExtra = 8 << 20
)

// reportExtras is the run's per-catalog report view as archive extra files.
func (r *run) reportExtras() []archive.ExtraRecord {
	if err := r.settleCatalogs(); err != nil {
		r.log.Warn("the report's per-catalog view is not carried in the batch", "error", err)
		return nil
	}
	if len(r.rep.catalogs) == 0 {
		return nil
	}
	data, err := json.Marshal(r.rep.catalogs)
	if err == nil && len(data) > maxReportExtra {
		var bare []report.Catalog
		for _, c := range r.rep.catalogs {
			cc := *c
			cc.Packages = nil
			for _, p := range c.Packages {
				pp := *p
				pp.Graph = ""
				cc.Packages = append(cc.Packages, &pp)
			}
			bare = append(bare, cc)
		}
		data, err = json.Marshal(bare)
		r.log.Info("the report's upgrade graphs are too big for the batch: disk-to-mirror's report shows the packages without them", "bytes", len(data))
	}
	if err != nil || len(data) > maxReportExtra {
		r.log.Warn("the report's per-catalog view is not carried in the batch: disk-to-mirror's report lists the packages only", "bytes", len(data), "error", err)
		return nil
	}
	return []archive.ExtraRecord{{Source: reportExtraSource, Name: reportExtraName, Data: data}}
}

// archivedReport reads the per-catalog report view a batch carries, by
// catalog (none for a batch without it).
func archivedReport(m *archive.Manifest) map[string]*report.Catalog {
	out := map[string]*report.Catalog{}
	for _, x := range m.Extras {
		if x.Source != reportExtraSource || x.Name != reportExtraName {
			continue
		}
		var cats []*report.Catalog
		if json.Unmarshal(x.Data, &cats) != nil {
			return out
		}
		for _, c := range cats {
			if c == nil {
				continue
			}
			for _, p := range c.Packages {
				if p != nil && !inertSVG(p.Graph) {
					p.Graph = "" // the page inlines it: only a plain picture
				}
			}
			c.Packages = slices.DeleteFunc(c.Packages, func(p *report.Package) bool { return p == nil })
			out[c.Source] = c
		}
	}
	return out
}

// archivedCatalogReport is the report view of catalog source as the batch
// recorded it, keeping the packages disk-to-mirror pushed (packages: a
// configuration that asks for less prunes the archived catalog again); nil
// when the batch carries none.
func (r *run) archivedCatalogReport(source string, packages []string) *report.Catalog {
	c := r.rep.archived[source]
	if c == nil {
		return nil
	}
	keep := map[string]bool{}
	for _, p := range packages {
		keep[p] = true
	}
	out := &report.Catalog{Source: c.Source, Full: c.Full, Warnings: c.Warnings}
	for _, p := range c.Packages {
		if keep[p.Name] || len(packages) == 0 {
			out.Packages = append(out.Packages, p)
		}
	}
	return out
}

// activeSVG finds what an SVG drawn by the upgrade graph renderer never holds
// and a page must not inline from an archive: scripts, event handlers, links
// (Graphviz's <a xlink:title> tooltips have no href and stay), embedded
// documents and styles.
var activeSVG = regexp.MustCompile(`(?i)<\s*(script|foreignobject|iframe|object|embed|use|image|animate|set|style)\b|\bon[a-z]+\s*=|javascript:|xlink:href|\bhref\s*=`)

// inertSVG reports whether s, an upgrade graph a batch carries, is a plain
// SVG picture ("" is: no graph).
func inertSVG(s string) bool {
	if s == "" {
		return true
	}
	t := strings.TrimSpace(s)
	return (strings.HasPrefix(t, "<svg") || strings.HasPrefix(t, "<?xml")) && !activeSVG.MatchString(s)
}
