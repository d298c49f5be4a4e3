// Package helm is the Helm chart engine: chart repository indexes, chart
// downloads checked against their index digest, rendering with Helm's own
// engine, image discovery in the rendered objects, and charts as OCI
// artifacts. It knows no copying and no workflow.
package helm

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// ErrNotFound is wrapped by errors about a chart or version a repository's
// index does not hold.
var ErrNotFound = errors.New("not in the chart repository")

// Index is a chart repository's index.yaml: the versions of each chart.
type Index struct {
	APIVersion string                     `json:"apiVersion"`
	Entries    map[string][]*ChartVersion `json:"entries"`
}

// ChartVersion is one version of a chart in an index.
type ChartVersion struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	AppVersion string   `json:"appVersion,omitempty"`
	URLs       []string `json:"urls"`
	// Digest is the SHA-256 of the chart archive, hex, as the index gives it.
	Digest string `json:"digest,omitempty"`
	// Created is kept as written (index.yaml for the mirror side).
	Created string `json:"created,omitempty"`
}

// ParseIndex reads an index.yaml (or its JSON form). source names it in
// errors.
func ParseIndex(data []byte, source string) (*Index, error) {
	var idx Index
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("chart repository index %s: %w", source, err)
	}
	if idx.APIVersion == "" {
		return nil, fmt.Errorf("chart repository index %s has no apiVersion: it is not a Helm repository index (is the URL the repository, without /index.yaml?)", source)
	}
	for name, vs := range idx.Entries {
		kept := vs[:0]
		for _, v := range vs {
			if v == nil || v.Version == "" {
				continue
			}
			if v.Name == "" {
				v.Name = name
			}
			kept = append(kept, v)
		}
		idx.Entries[name] = kept
	}
	return &idx, nil
}

// Versions lists a chart's versions in the index, newest first.
func (idx *Index) Versions(chart string) []*ChartVersion {
	vs := append([]*ChartVersion(nil), idx.Entries[chart]...)
	sort.SliceStable(vs, func(i, j int) bool { return newer(vs[i].Version, vs[j].Version) })
	return vs
}

// Charts are the chart names of the index, sorted.
func (idx *Index) Charts() []string {
	out := make([]string, 0, len(idx.Entries))
	for n := range idx.Entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func newer(a, b string) bool {
	va, ea := semver.NewVersion(a)
	vb, eb := semver.NewVersion(b)
	if ea != nil || eb != nil {
		return ea == nil || (eb != nil && a > b)
	}
	return va.GreaterThan(vb)
}

// Select returns the newest version of chart that constraint accepts: an
// exact version, a semver constraint as Helm accepts (">=1.2 <2", "~1.4"),
// or empty for the newest release (pre-releases only when named). The error
// lists the versions the index has.
func (idx *Index) Select(chart, constraint string) (*ChartVersion, error) {
	vs := idx.Versions(chart)
	if len(vs) == 0 {
		return nil, fmt.Errorf("chart %q: %w (it has %s)", chart, ErrNotFound, listOr(idx.Charts(), "no charts"))
	}
	for _, v := range vs {
		if v.Version == constraint {
			return v, nil
		}
	}
	c, err := constraintOf(constraint)
	if err != nil {
		return nil, fmt.Errorf("chart %q version %q: %w", chart, constraint, err)
	}
	for _, v := range vs {
		sv, err := semver.NewVersion(v.Version)
		if err != nil {
			continue
		}
		if c.Check(sv) {
			return v, nil
		}
	}
	var have []string
	for _, v := range vs {
		have = append(have, v.Version)
	}
	what := "any version"
	if constraint != "" {
		what = "version " + constraint
	}
	return nil, fmt.Errorf("chart %q %s: %w (it has %s)", chart, what, ErrNotFound, strings.Join(have, ", "))
}

func constraintOf(s string) (*semver.Constraints, error) {
	if s == "" {
		s = "*"
	}
	return semver.NewConstraint(s)
}

// ChartURL is the absolute URL of v's archive, relative URLs read against
// the repository URL.
func ChartURL(repoURL string, v *ChartVersion) (string, error) {
	if len(v.URLs) == 0 {
		return "", fmt.Errorf("chart %s %s: the index gives no URL", v.Name, v.Version)
	}
	base, err := url.Parse(strings.TrimSuffix(repoURL, "/") + "/")
	if err != nil {
		return "", err
	}
	u, err := base.Parse(v.URLs[0])
	if err != nil {
		return "", fmt.Errorf("chart %s %s: URL %q: %w", v.Name, v.Version, v.URLs[0], err)
	}
	return u.String(), nil
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}
