package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/provenance"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	helmrepo "helm.sh/helm/v3/pkg/repo"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/browser"
	"github.com/airlock-mirror/airlock/report"
)

// What the Helm tests check of a run's charts, each with a client that is
// not airlock's: Helm's own registry client, install action and repository
// code, headless Chromium.

// helmRenderFromMirror pulls ref (REPO:VERSION) from the mirror with Helm's
// registry client and installs it client-only (dry run) with values: the
// manifests it renders, its hooks' included.
func helmRenderFromMirror(t *testing.T, what string, hc *helmregistry.Client, ref string, values map[string]any) string {
	t.Helper()
	pulled, err := hc.Pull(ref)
	if err != nil {
		t.Fatalf("%s: helm pull oci://%s: %v", what, ref, err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(pulled.Chart.Data))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.ReleaseName, install.Namespace = true, true, "consumer", "default"
	rel, err := install.Run(ch, values)
	if err != nil {
		t.Fatalf("%s: helm install --dry-run of %s: %v", what, ref, err)
	}
	var b strings.Builder
	b.WriteString(rel.Manifest)
	for _, h := range rel.Hooks {
		b.WriteString("\n---\n" + h.Manifest)
	}
	return b.String()
}

// helmInstallsFromMirror pulls the workloads chart ref (REPO:VERSION) from
// the mirror with Helm's registry client, installs it client-only (dry run)
// with its images named at src, and asks inMirror whether each image the
// rendered manifests name is in the mirror under mirrorNS by the digest it
// has at src.
func helmInstallsFromMirror(t *testing.T, what string, hc *helmregistry.Client, ref, src, mirrorNS string, inMirror func(mirrored, img string) bool) {
	t.Helper()
	manifest := helmRenderFromMirror(t, what, hc, ref, map[string]any{"registry": src, "first": map[string]any{"image": src + "/sidecar/first:1.0"}, "second": map[string]any{"image": src + "/sidecar/second:1.0"}})
	for _, img := range workloadImages(src) {
		if !strings.Contains(manifest, img) {
			t.Errorf("%s: %s renders no %s", what, ref, img)
		}
		if mirrored := mirrorNS + strings.TrimPrefix(img, src); !inMirror(mirrored, img) {
			t.Errorf("%s: %s (rendered by %s) is not in the mirror by digest", what, mirrored, ref)
		}
	}
}

// checkChartIndexes loads the index.yaml of each repository of want in
// workingDir/helm-charts with Helm's own repository code, checks every
// archive beside it against the digest the index gives, loads it with
// Helm's loader, and finds the chart versions want names.
func checkChartIndexes(t *testing.T, what, workingDir string, want map[string][]string) {
	t.Helper()
	for name, charts := range want {
		dir := filepath.Join(workingDir, "helm-charts", name)
		idx, err := helmrepo.LoadIndexFile(filepath.Join(dir, "index.yaml"))
		if err != nil {
			t.Errorf("%s: repository %s: Helm does not load its index.yaml: %v", what, name, err)
			continue
		}
		for _, c := range charts {
			chart, version, _ := strings.Cut(c, " ")
			if !idx.Has(chart, version) {
				t.Errorf("%s: %s/index.yaml has no %s", what, name, c)
			}
		}
		for chart, versions := range idx.Entries {
			for _, cv := range versions {
				if len(cv.URLs) != 1 || strings.Contains(cv.URLs[0], "/") {
					t.Errorf("%s: %s %s %s: URLs %v, want one relative to the index", what, name, chart, cv.Version, cv.URLs)
					continue
				}
				p := filepath.Join(dir, cv.URLs[0])
				if d, err := provenance.DigestFile(p); err != nil || d != cv.Digest {
					t.Errorf("%s: %s: digest %s, the index says %s (%v)", what, p, d, cv.Digest, err)
				}
				if ch, err := loader.Load(p); err != nil || ch.Name() != chart || ch.Metadata.Version != cv.Version {
					t.Errorf("%s: %s does not load as %s %s: %v", what, p, chart, cv.Version, err)
				}
			}
		}
	}
}

// checkChartReport finds chart's row in report.json and report.html: its
// artifact at the destination, copied, and an image with where in the chart.
func checkChartReport(t *testing.T, what, workingDir, repo, chart, version, artifact, where, path string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(workingDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Run
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Charts, func(c report.Chart) bool { return c.Repository == repo && c.Chart == chart && c.Version == version })
	if i < 0 {
		t.Fatalf("%s: report.json has no chart %s/%s %s: %+v", what, repo, chart, version, rep.Charts)
	}
	c := rep.Charts[i]
	if !strings.HasPrefix(c.Artifact, artifact) || c.Status != "copied" || len(c.Images) == 0 {
		t.Errorf("%s: report row of %s: %+v", what, chart, c)
	}
	if !slices.ContainsFunc(c.Images, func(im report.ChartImage) bool {
		return im.Status == "copied" && slices.ContainsFunc(im.Where, func(w string) bool { return strings.Contains(w, where) && strings.HasSuffix(w, path) })
	}) {
		t.Errorf("%s: no image of %s is found at %s %s: %+v", what, chart, where, path, c.Images)
	}
	page, err := os.ReadFile(filepath.Join(workingDir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`<h2 id="charts">Helm charts</h2>`, "<td>" + chart + "</td><td>" + version + "</td>", html.EscapeString(where + " " + path)} {
		if !strings.Contains(string(page), s) {
			t.Errorf("%s: report.html does not show %q", what, s)
		}
	}
}

// chartsInBrowser opens the report in headless Chromium (when the machine
// has it) and counts the rows of its Helm charts table: one per chart and
// the header, no console error, no network request.
func chartsInBrowser(t *testing.T, page string, charts int) {
	t.Helper()
	bin := browser.Find()
	if bin == "" {
		t.Log("no chromium: the report's chart rows were checked in report.html only")
		return
	}
	r, err := browser.Open(context.Background(), bin, page, browser.Options{Eval: `document.querySelectorAll("#charts + table tr").length`})
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := json.Unmarshal(r.Value, &rows); err != nil || rows != charts+1 || len(r.Errors) > 0 || len(r.Requests) > 0 {
		t.Errorf("the browser sees %s rows in the charts table (want %d and a header), console errors %q, requests %q", r.Value, charts, r.Errors, r.Requests)
	}
}

// checkPinnedCharts: the pinned configuration names every chart by the
// exact version mirrored: a range by the version chosen, a repository
// listing no charts by every version mirrored.
func checkPinnedCharts(t *testing.T, pinned string) {
	t.Helper()
	pc, err := imageset.LoadFile(pinned)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, r := range pc.Mirror.Helm.Repositories {
		for _, c := range r.Charts {
			got[r.Name] = append(got[r.Name], c.Name+" "+c.Version)
		}
	}
	if v := got["apps"]; !slices.Equal(v, []string{"workloads 1.2.0"}) {
		t.Errorf("pinned apps: %v, want the range pinned to workloads 1.2.0", v)
	}
	if v := got["oci-range"]; !slices.Equal(v, []string{"service-binding-operator 1.3.0"}) {
		t.Errorf("pinned oci-range: %v", v)
	}
	if v := got["sbo"]; len(v) != 10 || !slices.Contains(v, "service-binding-operator 1.0.0") {
		t.Errorf("pinned sbo (every version): %v, want its 10 versions listed", v)
	}
}
