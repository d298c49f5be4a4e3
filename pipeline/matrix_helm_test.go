package pipeline_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"testing"

	helmregistry "helm.sh/helm/v3/pkg/registry"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// matrixHelmClient is Helm's registry client reaching tg as c.
func matrixHelmClient(t *testing.T, tg *registrytest.Target, c registrytest.Credentials) *helmregistry.Client {
	t.Helper()
	o := []helmregistry.ClientOption{
		helmregistry.ClientOptWriter(io.Discard), helmregistry.ClientOptCredentialsFile(tg.AuthFile(t, c)),
		helmregistry.ClientOptHTTPClient(&http.Client{Transport: tg.Transport()}),
	}
	if !tg.TLS() {
		o = append(o, helmregistry.ClientOptPlainHTTP())
	}
	hc, err := helmregistry.NewClient(o...)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// matrixHelm: operators, an additional image and Helm charts (an HTTP chart
// repository, and an oci:// one on the source registry, pushed there by
// Helm, with a version range) mirror in one run, mirror-to-mirror and
// through the air gap; Helm's client pulls each chart from the destination
// and installs it client-only, every image it renders served there by the
// digest the source has.
func matrixHelm(t *testing.T, e *matrixEnv) {
	ctx := context.Background()
	for i, ref := range workloadImages(e.src.Host) {
		if _, err := imagetest.Push(ctx, ref, fakeimage.Spec{Seed: uint64(900 + i), Layers: 1}, e.src.Remote(e.src.Push)...); err != nil {
			t.Fatal(err)
		}
	}
	repo := startChartRepo(t)
	if _, err := matrixHelmClient(t, e.src, e.src.Push).Push(repo.files["/charts/workloads-1.2.0.tgz"], e.src.Host+"/helm/workloads:1.2.0"); err != nil {
		t.Fatal(err)
	}
	cfg := e.config(t)
	base, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeMatrixFile(t, cfg, string(base)+"  helm:\n    repositories:\n"+
		workloadsRepo("apps", repo.srv.URL+"/charts", "1.2.0", e.src.Host, true)+
		workloadsRepo("oci", "oci://"+e.src.Host+"/helm", ">=1.0 <2", e.src.Host, true))
	options := func(ns string) pipeline.Options {
		o := e.options(t, ns)
		o.ConfigPath = cfg
		return o
	}
	hc := matrixHelmClient(t, e.dst, e.dst.Pull)
	installs := func(what string, res *pipeline.Result, ns string) {
		t.Helper()
		checkAtDestination(t, e, res, ns)
		for _, ref := range []string{"apps/workloads:1.2.0", "oci/workloads:1.2.0"} {
			helmInstallsFromMirror(t, what, hc, e.dst.Host+"/"+ns+"/"+ref, e.src.Host, e.dst.Host+"/"+ns, func(mirrored, img string) bool {
				want, err := e.src.Digest(ctx, img[len(e.src.Host)+1:])
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.dst.Digest(ctx, mirrored[len(e.dst.Host)+1:])
				return err == nil && want != "" && got == want
			})
		}
	}

	o := options("helm-m2m")
	o.Workspace = location.File(t.TempDir())
	res, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err, failedImages(res))
	}
	installs("mirror-to-mirror", res, "helm-m2m")

	dir := t.TempDir()
	o = options("unused")
	o.Destination.Location = location.File(dir)
	res, err = pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatalf("mirror-to-disk: %v %v", err, failedImages(res))
	}
	repo.srv.Close() // the far side reads the charts from the archive alone
	o = options("helm-d2m")
	o.Archive.From, o.Workspace = location.File(res.Archive.Dir), location.File(t.TempDir())
	res, err = pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatalf("disk-to-mirror: %v %v", err, failedImages(res))
	}
	installs("disk-to-mirror", res, "helm-d2m")
	checkChartIndexes(t, "disk-to-mirror", res.WorkingDir, map[string][]string{"apps": {"workloads 1.2.0"}, "oci": {"workloads 1.2.0"}})
}
