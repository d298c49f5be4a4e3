package imageset

import (
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/client-go/util/jsonpath"
)

// The helm stanza's rules: what a chart repository URL, a chart version
// constraint, an image path and a local chart may be.

func (v *validator) helm(p string, h *Helm) {
	names := map[string]bool{}
	for i, r := range h.Repositories {
		rp := indexPath(p+".repositories", i)
		switch {
		case r.Name == "":
			v.report(rp+".name", ErrInvalid, "chart repository name is empty; name it (it is the repository path of its charts in the mirror), e.g. name: podinfo")
		case names[r.Name]:
			v.report(rp+".name", ErrInvalid, "chart repository name %s is used twice; give each repository its own name", quote(r.Name))
		default:
			names[r.Name] = true
			v.repoPath(rp+".name", "chart repository name", strings.ToLower(r.Name))
		}
		v.chartRepoURL(rp+".url", r.URL)
		charts := map[string]bool{}
		for j, c := range r.Charts {
			cp := indexPath(rp+".charts", j)
			if c.Name == "" {
				v.report(cp+".name", ErrInvalid, "chart name is empty; set it to the chart's name in the repository's index, e.g. name: podinfo")
			}
			if c.Path != "" {
				v.report(cp+".path", ErrInvalid, "a repository chart has no path; move a chart on disk to helm.local")
			}
			key := c.Name + "@" + c.Version
			if charts[key] {
				v.report(cp, ErrInvalid, "chart %s version %s is listed twice in repository %s; remove one", quote(c.Name), quote(c.Version), quote(r.Name))
			}
			charts[key] = true
			if c.Version != "" {
				if _, err := semver.NewConstraint(c.Version); err != nil {
					v.report(cp+".version", ErrInvalid, "chart version %s is neither a version nor a semver constraint (%v); write 1.4.1, \">=1.2 <2\" or \"~1.4\"", quote(c.Version), err)
				}
			}
			v.chartOptions(cp, c)
		}
	}
	local := map[string]bool{}
	for i, c := range h.Local {
		cp := indexPath(p+".local", i)
		switch {
		case c.Name == "":
			v.report(cp+".name", ErrInvalid, "local chart name is empty; name it as the chart names itself (Chart.yaml name)")
		case local[c.Name]:
			v.report(cp+".name", ErrInvalid, "local chart %s is listed twice; remove one", quote(c.Name))
		}
		local[c.Name] = true
		if c.Path == "" {
			v.report(cp+".path", ErrInvalid, "local chart %s has no path; set path to a chart archive (.tgz) or a chart folder", quote(c.Name))
		}
		if c.Version != "" {
			v.report(cp+".version", ErrInvalid, "a local chart has no version to choose: the archive or folder is the version; remove version")
		}
		v.chartOptions(cp, c)
	}
}

// chartOptions checks what repository and local charts share: image paths,
// platforms and values.
func (v *validator) chartOptions(cp string, c HelmChart) {
	for k, ip := range c.ImagePaths {
		if err := jsonpath.New("imagePaths").Parse(ip); err != nil || !strings.Contains(ip, "{") {
			why := "it names no field in {}"
			if err != nil {
				why = err.Error()
			}
			v.report(indexPath(cp+".imagePaths", k), ErrInvalid, "image path %s is not a JSONPath expression (%s); write e.g. {.spec.template.spec.containers[*].env[*].value}", quote(ip), why)
		}
	}
	if c.ValuesFile != "" && c.Values != nil {
		v.report(cp+".valuesFile", ErrInvalid, "chart %s sets both values and valuesFile; keep one", quote(c.Name))
	}
	v.platforms(cp+".platforms", c.Platforms, c.Platforms != nil || v.written(cp+".platforms"))
}

// chartRepoURL checks a chart repository URL: http(s):// or oci://, with a
// host, without credentials.
func (v *validator) chartRepoURL(p, s string) {
	if s == "" {
		v.report(p, ErrInvalid, "chart repository url is empty; set it to the repository's address, e.g. https://charts.example.com or oci://registry.example.com/charts")
		return
	}
	if v.credentials(p, "chart repository url", s) {
		return
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		v.report(p, ErrInvalid, "chart repository url %s is not an absolute URL; write https://charts.example.com or oci://registry.example.com/charts", quote(s))
		return
	}
	switch u.Scheme {
	case "http", "https", "oci":
	default:
		v.report(p, ErrInvalid, "chart repository url %s uses scheme %s; use https://, http:// or oci://", quote(s), quote(u.Scheme))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		v.report(p, ErrInvalid, "chart repository url %s has a query or fragment; remove it", quote(s))
	}
}

// chartVersionAccepts reports whether a chart's version field (a version, a
// constraint, or empty for any) accepts version v.
func chartVersionAccepts(field, v string) bool {
	if field == "" || field == v {
		return true
	}
	c, err := semver.NewConstraint(field)
	if err != nil {
		return false
	}
	sv, err := semver.NewVersion(v)
	return err == nil && c.Check(sv)
}

// newestAccepted is the newest of versions that a chart's version field
// accepts ("" when none does).
func newestAccepted(field string, versions []string) string {
	best, bestV := "", (*semver.Version)(nil)
	for _, v := range versions {
		if !chartVersionAccepts(field, v) {
			continue
		}
		sv, err := semver.NewVersion(v)
		if best == "" || err == nil && bestV != nil && sv.GreaterThan(bestV) {
			best, bestV = v, sv
		}
	}
	return best
}
