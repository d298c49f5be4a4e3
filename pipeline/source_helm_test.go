package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	helmregistry "helm.sh/helm/v3/pkg/registry"

	"github.com/airlock-mirror/airlock/helm"
	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// chartRepo is an HTTP chart repository on 127.0.0.1 serving the charts of
// helm/testdata: /charts (an index made from the archives) and /sbo
// (oc-mirror's service-binding-operator index, as published). tamper
// serves other bytes for one archive.
type chartRepo struct {
	srv    *httptest.Server
	files  map[string][]byte
	tamper string
}

func startChartRepo(t *testing.T) *chartRepo {
	t.Helper()
	cr := &chartRepo{files: map[string][]byte{}}
	var entries []helm.IndexEntry
	workloads, err := helm.LoadPath(filepath.Join("..", "helm", "testdata", "charts", "workloads"))
	if err != nil {
		t.Fatal(err)
	}
	required, err := helm.LoadPath(filepath.Join("..", "helm", "testdata", "charts", "required"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*helm.Chart{workloads, required, mustChart(t, "podinfo-5.0.0.tgz"), mustChart(t, "test-mirror-helm-0.3.0.tgz")} {
		f := c.Name() + "-" + c.Version() + ".tgz"
		cr.files["/charts/"+f] = c.Archive
		entries = append(entries, helm.IndexEntry{Chart: c, URL: f})
	}
	idx, err := helm.WriteIndex(entries)
	if err != nil {
		t.Fatal(err)
	}
	cr.files["/charts/index.yaml"] = idx
	sbo, _ := filepath.Glob(filepath.Join("..", "helm", "testdata", "oc-mirror", "charts", "service-binding-operator-*.tgz"))
	for _, p := range sbo {
		b, _ := os.ReadFile(p)
		cr.files["/sbo/"+filepath.Base(p)] = b
	}
	cr.files["/sbo/index.yaml"], _ = os.ReadFile(filepath.Join("..", "helm", "testdata", "oc-mirror", "indexes", "service-binding-operator-index.yaml"))
	cr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := cr.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == cr.tamper {
			b = append([]byte("tampered"), b...)
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(cr.srv.Close)
	return cr
}

func mustChart(t *testing.T, file string) *helm.Chart {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "helm", "testdata", "oc-mirror", "charts", file))
	if err != nil {
		t.Fatal(err)
	}
	c, err := helm.LoadArchive(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// workloadImages are the images the workloads chart runs with registry
// set to host, as its values name them.
func workloadImages(host string) []string {
	var out []string
	for _, p := range []string{"app/pod", "tools/debug", "app/init", "app/db", "app/backup", "app/agent", "app/rs", "app/job", "app/cron", "app/widget", "sidecar/first", "sidecar/second"} {
		out = append(out, host+"/"+p+":1.0")
	}
	return out
}

// workloadsRepo is a helm.repositories entry named name at url (an HTTP
// repository serving /charts, or oci://…) asking for the workloads chart
// with its images at host: version is an exact version or a range;
// imagePaths adds the path of its widget image.
func workloadsRepo(name, url, version, host string, imagePaths bool) string {
	s := fmt.Sprintf("    - name: %s\n      url: %s\n      charts:\n      - name: workloads\n        version: %q\n        values: %s\n", name, url, version, workloadValues(host))
	if imagePaths {
		s += "        imagePaths: [\"{.spec.widgetImage}\"]\n"
	}
	return s
}

func workloadValues(host string) string {
	return fmt.Sprintf(`{registry: %q, first: {image: %q}, second: {image: %q}}`, host, host+"/sidecar/first:1.0", host+"/sidecar/second:1.0")
}

// helmClient is Helm's own registry client, for plain HTTP on 127.0.0.1.
func helmClient(t *testing.T) *helmregistry.Client {
	t.Helper()
	c, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard),
		helmregistry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHelmEndToEnd: operators, additional images and Helm charts (an HTTP
// repository with a version range and values, every version of oc-mirror's
// service-binding-operator repository, an oci:// repository pushed by Helm
// itself, a local chart) mirror in one run, mirror-to-mirror and through
// the air gap with the chart repository and the source registry gone. On
// each mirror, Helm's client pulls every chart and installs it client-only;
// every image the rendered manifests name is in the mirror by digest.
func TestHelmEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	src := e.src.Host()
	digests := map[string]string{}
	for i, ref := range workloadImages(src) {
		digests[ref] = imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(200 + i), Layers: 1}).Digest.String()
	}
	repo := startChartRepo(t)
	hc := helmClient(t)
	if _, err := hc.Push(repo.files["/charts/workloads-1.2.0.tgz"], src+"/helm/workloads:1.2.0"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.0", "1.3.0", "1.4.1"} { // a range picks 1.3.0 among the tags
		if _, err := hc.Push(repo.files["/sbo/service-binding-operator-"+v+".tgz"], src+"/helm/service-binding-operator:"+v); err != nil {
			t.Fatal(err)
		}
	}
	local := filepath.Join(t.TempDir(), "test-mirror-helm-0.3.0.tgz")
	if err := os.WriteFile(local, repo.files["/charts/test-mirror-helm-0.3.0.tgz"], 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
    packages:
    - name: bar
  additionalImages:
  - name: %s
  blockedImages:
  - name: ^(quay\.io|ghcr\.io|docker\.io|registry\.k8s\.io)/
  helm:
    repositories:
%s    - name: sbo
      url: %s/sbo
%s    - name: oci-range
      url: oci://%s/helm
      charts:
      - name: service-binding-operator
        version: ">=1.1 <1.4"
    local:
    - name: test-mirror-helm
      path: %s
      imagePaths: ["{.spec.template.spec.containers[*].env[*].value}"]
`, e.seeded.Catalog, e.extra, workloadsRepo("apps", repo.srv.URL+"/charts", ">=1.0 <2", src, true), repo.srv.URL,
		workloadsRepo("oci", "oci://"+src+"/helm", "1.2.0", src, false), src, local)
	cfgPath := writeCfg(t, cfg)

	// check: the charts install from the mirror with Helm's client and every
	// image they render is in the mirror by digest.
	check := func(what, mirrorNS string, res *pipeline.Result) {
		t.Helper()
		for _, ref := range []string{mirrorNS + "/apps/workloads:1.2.0", mirrorNS + "/oci/workloads:1.2.0"} {
			helmInstallsFromMirror(t, what, hc, ref, src, mirrorNS, func(mirrored, img string) bool {
				r, err := name.ParseReference(mirrored)
				if err != nil {
					t.Fatal(err)
				}
				d, err := remote.Head(r)
				return err == nil && d.Digest.String() == digests[img]
			})
		}
		for _, v := range []string{"1.0.0", "1.4.1"} {
			if _, err := hc.Pull(mirrorNS + "/sbo/service-binding-operator:" + v); err != nil {
				t.Errorf("%s: service-binding-operator %s not in the mirror: %v", what, v, err)
			}
		}
		if _, err := hc.Pull(mirrorNS + "/local/test-mirror-helm:0.3.0"); err != nil {
			t.Errorf("%s: the local chart is not in the mirror: %v", what, err)
		}
		if _, err := hc.Pull(mirrorNS + "/oci-range/service-binding-operator:1.3.0"); err != nil {
			t.Errorf("%s: the oci:// chart chosen by a range (1.3.0) is not in the mirror: %v", what, err)
		}
		checkChartIndexes(t, what, res.WorkingDir, map[string][]string{
			"apps": {"workloads 1.2.0"}, "oci": {"workloads 1.2.0"}, "oci-range": {"service-binding-operator 1.3.0"},
			"local": {"test-mirror-helm 0.3.0"}, "sbo": {"service-binding-operator 1.0.0", "service-binding-operator 1.4.1"},
		})
		checkChartReport(t, what, res.WorkingDir, "apps", "workloads", "1.2.0", mirrorNS+"/apps/workloads:1.2.0",
			"workloads/templates/workloads.yaml CronJob cron", ".spec.jobTemplate.spec.template.spec.containers[0].image")
		sets, _ := filepath.Glob(filepath.Join(res.WorkingDir, "cluster-resources", "i*ms-*.yaml"))
		var all strings.Builder
		for _, f := range sets {
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), "helm-charts.invalid") {
				t.Errorf("%s: %s names the charts built here (pulled with oci://, no mirror rule)", what, f)
			}
			if strings.Contains(filepath.Base(f), "generic") {
				all.Write(b)
			}
		}
		if !strings.Contains(all.String(), src+"/app") || !strings.Contains(all.String(), src+"/sidecar") {
			t.Errorf("%s: the chart images are not in the generic mirror sets: %s", what, all.String())
		}
	}

	dst := registrytest.Start(t)
	o := opts(cfgPath)
	o.Destination, o.Workspace = dest(location.Docker(dst.Host()+"/m2m")), location.File(t.TempDir())
	res, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err, failedImages(res))
	}
	check("mirror-to-mirror", dst.Host()+"/m2m", res)
	checkPinnedCharts(t, res.PinnedConfig)
	chartsInBrowser(t, filepath.Join(res.WorkingDir, "report.html"), 14) // workloads twice, sbo's 10, the range, the local chart

	target := t.TempDir()
	o = opts(cfgPath)
	o.Destination = dest(location.File(target))
	if _, err := pipeline.Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	repo.srv.Close()
	e.src.Stop()
	if err := os.Remove(local); err != nil {
		t.Fatal(err)
	}
	far := registrytest.Start(t)
	o = opts(cfgPath)
	o.Archive.From, o.Workspace, o.Destination = location.File(target), location.File(t.TempDir()), dest(location.Docker(far.Host()+"/far"))
	res, err = pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	check("disk-to-mirror", far.Host()+"/far", res)
}

// TestHelmFailures: a repository that is down, a version the index lacks,
// a chart whose archive does not match its index digest, a render error and
// an image that no longer exists each fail their chart's images, named, and
// the rest of the run is mirrored.
func TestHelmFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := registrytest.Start(t)
	present := workloadImages(src.Host())
	for i, ref := range present[1:] { // app/pod is gone
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(300 + i), Layers: 1})
	}
	extra := src.Host() + "/tools/extra:1.0"
	imagetest.MustPush(t, extra, fakeimage.Spec{Seed: 399, Layers: 1})
	repo := startChartRepo(t)
	repo.tamper = "/sbo/service-binding-operator-1.3.0.tgz"
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	cfg := fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  additionalImages:
  - name: %s
  blockedImages:
  - name: ^(quay\.io|ghcr\.io|docker\.io|registry\.k8s\.io)/
  helm:
    repositories:
%s      - name: podinfo
        version: 9.9.9
      - name: required
    - name: sbo
      url: %s/sbo
      charts:
      - name: service-binding-operator
        version: 1.3.0
    - name: gone
      url: %s
      charts:
      - name: anything
`, extra, workloadsRepo("apps", repo.srv.URL+"/charts", "1.2.0", src.Host(), false), repo.srv.URL, down.URL)
	cfgPath := writeCfg(t, cfg)
	dst := registrytest.Start(t)
	o := opts(cfgPath)
	o.Destination, o.Workspace = dest(location.Docker(dst.Host()+"/m")), location.File(t.TempDir())
	res, err := pipeline.Mirror(ctx, o)
	if err == nil || res == nil {
		t.Fatalf("Mirror = %v, want a run that says what failed", err)
	}
	errs := map[string]string{}
	for _, im := range res.Images {
		errs[im.Source] = im.Error
	}
	for _, want := range []struct{ source, err string }{
		{"helm-charts.invalid/apps/podinfo:9.9.9", "it has 5.0.0"},
		{"helm-charts.invalid/sbo/service-binding-operator:1.3.0", "does not match its index digest"},
		{"helm-charts.invalid/gone/anything:latest", "chart repository"},
		{present[0], "resolve"},
	} {
		if !strings.Contains(errs[want.source], want.err) {
			t.Errorf("%s: error %q, want %q (images: %v)", want.source, errs[want.source], want.err, keys(errs))
		}
	}
	for _, ok := range append([]string{extra, "helm-charts.invalid/apps/workloads:1.2.0"}, present[1:len(present)-3]...) { // no imagePaths: no widget
		if e, seen := errs[ok]; !seen || e != "" {
			t.Errorf("%s: %q, want it mirrored", ok, e)
		}
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "set image.repository to the image to run") }) {
		t.Errorf("no warning names the chart that fails to render: %v", res.Warnings)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func failedImages(res *pipeline.Result) []string {
	if res == nil {
		return nil
	}
	var out []string
	for _, im := range res.Images {
		if im.Error != "" {
			out = append(out, im.Source+": "+im.Error)
		}
	}
	return out
}
