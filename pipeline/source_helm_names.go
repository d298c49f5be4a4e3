package pipeline

import (
	"github.com/Masterminds/semver/v3"

	"github.com/airlock-mirror/airlock/imageset"
)

// chartWant is one chart a helm stanza asks for.
type chartWant struct {
	repo, chart, version string
	// all: the repository lists no charts (every chart, every version).
	all bool
}

func (w chartWant) String() string {
	if w.all {
		return w.repo + "/* (every chart)"
	}
	s := w.repo + "/" + w.chart
	if w.version != "" {
		s += " " + w.version
	}
	return s
}

// matches reports whether the chart rec is one w asks for: same repository
// and chart, its version accepted by w's version or constraint (empty: any).
func (w chartWant) matches(rec chartRecord) bool {
	if rec.Repository != w.repo {
		return false
	}
	if w.all {
		return true
	}
	if rec.Chart != w.chart {
		return false
	}
	if w.version == "" || w.version == rec.Version {
		return true
	}
	c, err := semver.NewConstraint(w.version)
	if err != nil {
		return false
	}
	v, err := semver.NewVersion(rec.Version)
	return err == nil && c.Check(v)
}

// helmWanted lists what h asks for.
func helmWanted(h *imageset.Helm) []chartWant {
	var out []chartWant
	for _, r := range h.Repositories {
		if len(r.Charts) == 0 {
			out = append(out, chartWant{repo: r.Name, all: true})
		}
		for _, c := range r.Charts {
			out = append(out, chartWant{repo: r.Name, chart: c.Name, version: c.Version})
		}
	}
	for _, l := range h.Local {
		out = append(out, chartWant{repo: helmLocalRepo, chart: l.Name})
	}
	return out
}

// helmNames reports whether h asks for the chart rec.
func helmNames(h *imageset.Helm, rec chartRecord) bool {
	for _, w := range helmWanted(h) {
		if w.matches(rec) {
			return true
		}
	}
	return false
}
