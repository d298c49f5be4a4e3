package pipeline_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
)

// ocMirrorTests is oc-mirror's test configurations folder (imageset/testdata).
var ocMirrorTests = filepath.Join("..", "imageset", "testdata", "oc-mirror", "tests")

// ocMirrorConfig copies one of oc-mirror's configurations into a folder of
// the test, its chart repository URLs pointed at repo (podinfo's at
// /charts, service-binding-operator's at /sbo), with the files beside it.
func ocMirrorConfig(t *testing.T, rel string, repo *chartRepo, beside map[string][]byte) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ocMirrorTests, rel))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(
		"https://stefanprodan.github.io/podinfo", repo.srv.URL+"/charts",
		"https://redhat-developer.github.io/service-binding-operator-helm-chart/", repo.srv.URL+"/sbo/",
	).Replace(string(b))
	dir := t.TempDir()
	for f, data := range beside {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, filepath.Base(rel))
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var renderedImageRE = regexp.MustCompile(`(?m)^\s*(?:- )?image:\s*"?([^"\s]+)"?\s*$`)

// TestOCMirrorHelmConfigs runs oc-mirror's Helm test configurations as
// they are, against local servers: their chart repositories served on
// 127.0.0.1 from oc-mirror's own test charts, the public registries their
// charts name (quay.io, ghcr.io, docker.io) redirected by registries.conf to
// a registry on 127.0.0.1 holding test images under those names.
//
//   - e2e config-77060 (podinfo 5.0.0 and every version of
//     service-binding-operator): mirror-to-mirror; Helm's client pulls every
//     chart from the mirror and renders it; podinfo's images are in the
//     mirror by digest. service-binding-operator's charts pin their images
//     by the digests of the real images, which no test registry can serve:
//     those images fail, named, the charts are mirrored all the same.
//   - e2e delete-config-77061: delete --generate from the history, then
//     executed: the charts of config-77060 and podinfo's images are gone.
//   - e2e case83849 (a local chart, images in environment values through
//     imagePaths): mirror-to-disk, then disk-to-mirror without the chart.
//   - integration exit_codes isc-helm-error and isc-operator-helm-error (a
//     local chart that does not exist): refused before any registry is
//     reached, naming the chart and its path.
func TestOCMirrorHelmConfigs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	holder := registrytest.Start(t)
	digests := map[string]string{} // by the name the chart renders
	for i, img := range []string{
		"curlimages/curl:7.69.0", "ghcr.io/stefanprodan/podinfo:5.0.0", "giantswarm/tiny-tools", "stefanprodan/grpc_health_probe:v0.3.0",
		"quay.io/nginx/nginx-ingress:latest", "quay.io/prometheus/prometheus:latest",
	} {
		r, err := name.ParseReference(img)
		if err != nil {
			t.Fatal(err)
		}
		reg := r.Context().RegistryStr()
		if reg == name.DefaultRegistry {
			reg = "docker.io" // as registries.conf names it
		}
		at := holder.Host() + "/" + reg + "/" + r.Context().RepositoryStr() + ":" + r.Identifier()
		digests[img] = imagetest.MustPush(t, at, fakeimage.Spec{Seed: uint64(800 + i), Layers: 1}).Digest.String()
	}
	conf := filepath.Join(t.TempDir(), "registries.conf")
	var rc strings.Builder
	for _, reg := range []string{"quay.io", "ghcr.io", "docker.io", "registry.k8s.io"} {
		rc.WriteString("[[registry]]\nprefix = \"" + reg + "\"\nlocation = \"" + holder.Host() + "/" + reg + "\"\n\n")
	}
	if err := os.WriteFile(conf, []byte(rc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := startChartRepo(t)
	hc := helmClient(t)
	run := func(cfg string, o pipeline.Options) (*pipeline.Result, error) {
		o.ConfigPath, o.Source.RegistriesConf = cfg, conf
		return pipeline.Mirror(ctx, o)
	}
	// rendersFromMirror: the images ref renders, pulled from the mirror.
	rendersFromMirror := func(what, ref string) []string {
		t.Helper()
		var out []string
		for _, m := range renderedImageRE.FindAllStringSubmatch(helmRenderFromMirror(t, what, hc, ref, nil), -1) {
			out = append(out, m[1])
		}
		return out
	}
	inMirror := func(what string, res *pipeline.Result, img string) {
		t.Helper()
		i := slices.IndexFunc(res.Images, func(o pipeline.ImageOutcome) bool { return o.Source == img })
		if i < 0 {
			t.Errorf("%s: %s is not in the run", what, img)
			return
		}
		r, err := name.ParseReference(res.Images[i].Destination)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Head(r)
		if err != nil || d.Digest.String() != digests[img] {
			t.Errorf("%s: %s is not at %s by digest %s: %v (the run: %s %s)", what, img, res.Images[i].Destination, digests[img], err, res.Images[i].Status, res.Images[i].Error)
		}
	}

	// config-77060, mirror-to-mirror.
	dst := registrytest.Start(t)
	ws := location.File(t.TempDir())
	o := opts("")
	o.Destination, o.Workspace = dest(location.Docker(dst.Host()+"/m")), ws
	res, err := run(ocMirrorConfig(t, "e2e/test/e2e/testdata/workloads/config-77060.yaml", repo, nil), o)
	if !errors.Is(err, pipeline.ErrIncomplete) || res == nil {
		t.Fatalf("config-77060: %v, want the run incomplete (the images pinned by real digests)", err)
	}
	images := rendersFromMirror("config-77060", dst.Host()+"/m/podinfo/podinfo:5.0.0")
	if len(images) < 3 {
		t.Fatalf("podinfo renders %v", images)
	}
	for _, img := range images {
		inMirror("config-77060", res, img)
	}
	sbo, _ := filepath.Glob(filepath.Join("..", "helm", "testdata", "oc-mirror", "charts", "service-binding-operator-*.tgz"))
	for _, p := range sbo {
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "service-binding-operator-"), ".tgz")
		for _, img := range rendersFromMirror("config-77060", dst.Host()+"/m/sbo/service-binding-operator:"+v) {
			i := slices.IndexFunc(res.Images, func(o pipeline.ImageOutcome) bool { return o.Source == img })
			if !strings.Contains(img, "@sha256:") || i < 0 || res.Images[i].Status != "failed" {
				t.Errorf("service-binding-operator %s renders %s: want it pinned by a digest no test registry has, and failed", v, img)
			}
		}
	}
	if len(sbo) != 10 {
		t.Fatalf("%d service-binding-operator charts", len(sbo))
	}

	// delete-config-77061, from the history of that run.
	del := ocMirrorConfig(t, "e2e/test/e2e/testdata/workloads/delete-config-77061.yaml", repo, nil)
	plan, err := pipeline.Delete(ctx, deletion.Options{Generate: true, ConfigPath: del, Workspace: ws, Destination: location.Docker(dst.Host() + "/m")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Delete(ctx, deletion.Options{PlanFile: plan.PlanFile, Destination: location.Docker(dst.Host() + "/m")}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"/m/podinfo/podinfo:5.0.0", "/m/sbo/service-binding-operator:1.4.1", "/m/sbo/service-binding-operator:1.0.0"} {
		if _, err := hc.Pull(dst.Host() + ref); err == nil {
			t.Errorf("delete-config-77061: %s is still in the mirror", ref)
		}
	}
	gone := slices.IndexFunc(res.Images, func(o pipeline.ImageOutcome) bool { return o.Source == "ghcr.io/stefanprodan/podinfo:5.0.0" })
	if r, err := name.ParseReference(res.Images[gone].Destination); err != nil {
		t.Fatal(err)
	} else if _, err := remote.Head(r); err == nil {
		t.Errorf("delete-config-77061: podinfo's image %s is still in the mirror", r)
	}

	// case83849, through the air gap.
	local := ocMirrorConfig(t, "e2e/test/e2e/testdata/workloads/case83849/config-83849.yaml", repo,
		map[string][]byte{"test-mirror-helm-0.3.0.tgz": repo.files["/charts/test-mirror-helm-0.3.0.tgz"]})
	target := t.TempDir()
	o = opts("")
	o.Destination = dest(location.File(target))
	if _, err := run(local, o); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(filepath.Dir(local), "test-mirror-helm-0.3.0.tgz")); err != nil {
		t.Fatal(err)
	}
	far := registrytest.Start(t)
	o = opts("")
	o.Archive.From, o.Workspace, o.Destination = location.File(target), location.File(t.TempDir()), dest(location.Docker(far.Host()+"/far"))
	res, err = run(local, o)
	if err != nil {
		t.Fatal(err, failedImages(res))
	}
	rendered := rendersFromMirror("config-83849", far.Host()+"/far/local/test-mirror-helm:0.3.0")
	if !slices.Contains(rendered, "quay.io/nginx/nginx-ingress:latest") {
		t.Errorf("test-mirror-helm renders %v", rendered)
	}
	for _, img := range []string{"quay.io/nginx/nginx-ingress:latest", "quay.io/prometheus/prometheus:latest"} { // the second in an environment value
		inMirror("config-83849", res, img)
	}

	// The exit-code configurations: a local chart that does not exist.
	for _, rel := range []string{"isc-helm-error.yaml", "isc-operator-helm-error.yaml"} {
		o := opts("")
		o.Destination, o.Workspace = dest(location.Docker(dst.Host()+"/x")), location.File(t.TempDir())
		_, err := run(ocMirrorConfig(t, "integration/testdata/imagesetconfigs/exit_codes/"+rel, repo, nil), o)
		if err == nil || !strings.Contains(err.Error(), "helm.local nonexistent-chart") || !strings.Contains(err.Error(), "/nonexistent/path/to/chart") {
			t.Errorf("%s: %v, want the missing chart named with its path", rel, err)
		}
	}
}
