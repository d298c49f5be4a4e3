package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/pipeline"
)

// proxyTo fronts a registry and answers fail(r) (when non-zero) instead of it.
func proxyTo(t *testing.T, target string, fail func(r *http.Request) int) string {
	t.Helper()
	u, _ := url.Parse("http://" + target)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := fail(r); code != 0 {
			w.WriteHeader(code)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	pu, _ := url.Parse(srv.URL)
	return pu.Host
}

func writeCfg(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "imageset.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Mirror-to-disk with images in different namespaces sharing base layers (what
// real catalogs look like): every image lands, each blob once.
func TestMirrorToDiskSharedLayersAcrossNamespaces(t *testing.T) {
	t.Parallel()
	src := registrytest.Start(t)
	var lines []string
	for i := 0; i < 8; i++ {
		ref := fmt.Sprintf("%s/ns%d/img:1.0", src.Host(), i)
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(100 + i), BaseSeed: 7, BaseLayers: 3, Layers: 1, LayerSize: 256 << 10})
		lines = append(lines, "  - name: "+ref)
	}
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(lines, "\n")+"\n")
	dir := t.TempDir()
	o := opts(cfg)
	o.Destination.Location = location.File(dir)
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		for _, im := range res.Images {
			t.Logf("%s %s %s", im.Source, im.Status, im.Error)
		}
		t.Fatal(err)
	}
	// 8 images × (config + 1 unique layer) + 3 shared base layers + 8 manifests.
	if want := 8*2 + 3 + 8; res.Archive.Blobs != want {
		t.Errorf("archive holds %d blobs, want %d", res.Archive.Blobs, want)
	}
}

// Mirror-to-disk with an image that cannot be fetched: the batch holds the
// others and records the failure (ErrPartial); with AllOrNothing no archive is
// written.
func TestMirrorToDiskFailedImage(t *testing.T) {
	t.Parallel()
	src := registrytest.Start(t)
	imagetest.MustPush(t, src.Host()+"/tools/good:1.0", fakeimage.Spec{Seed: 1, Layers: 1})
	bad := imagetest.MustPush(t, src.Host()+"/tools/bad:1.0", fakeimage.Spec{Seed: 2, Layers: 1})
	badBlob := bad.Blobs[0].String()
	ph := proxyTo(t, src.Host(), func(r *http.Request) int {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+badBlob) {
			return http.StatusNotFound
		}
		return 0
	})
	cfg := writeCfg(t, fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: %s/tools/good:1.0\n  - name: %s/tools/bad:1.0\n", ph, ph))

	strict := t.TempDir()
	o := opts(cfg)
	o.Destination.Location = location.File(strict)
	o.Archive.AllOrNothing = true
	res, err := pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, pipeline.ErrIncomplete) || errors.Is(err, pipeline.ErrPartial) || !strings.Contains(err.Error(), "no archive was written") {
		t.Fatalf("AllOrNothing: err = %v, want ErrIncomplete saying no archive was written", err)
	}
	if res.Failed != 1 {
		t.Errorf("failed = %d, want 1", res.Failed)
	}
	if _, err := archive.Open(filepath.Join(strict, "batch-0001")); err == nil {
		t.Errorf("an archive was written despite the failure")
	}

	dir := t.TempDir()
	o = opts(cfg)
	o.Destination.Location = location.File(dir)
	res, err = pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, pipeline.ErrPartial) || !errors.Is(err, pipeline.ErrIncomplete) {
		t.Fatalf("err = %v, want ErrPartial", err)
	}
	if res.Failed != 1 || res.Archive == nil || res.Archive.Failed != 1 {
		t.Fatalf("failed = %d, archive %+v: want 1 failed, a partial batch", res.Failed, res.Archive)
	}
	ar, err := archive.Open(res.Archive.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	m := ar.ArchiveManifest()
	if len(m.Images) != 1 || !strings.HasSuffix(m.Images[0].Source, "/tools/good:1.0") {
		t.Errorf("archived images %+v, want tools/good only", m.Images)
	}
	if len(m.Failed) != 1 || !strings.HasSuffix(m.Failed[0].Source, "/tools/bad:1.0") || !strings.Contains(m.Failed[0].Error, "404") {
		t.Errorf("recorded failures %+v, want tools/bad with its 404", m.Failed)
	}
}

// A catalog whose image fails to copy gets no CatalogSource or ClusterCatalog.
func TestFailedCatalogGetsNoCatalogSource(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	ph := proxyTo(t, dst.Host(), func(r *http.Request) int {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "oc-mirror-index/manifests/") {
			return http.StatusBadRequest
		}
		return 0
	})
	o := opts(e.config(t, "    - name: foo"))
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(ph + "/mirror")
	res, err := pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, pipeline.ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	var catalogFailed bool
	for _, im := range res.Images {
		if im.Kind == mirror.KindCatalog {
			catalogFailed = im.Status == transfer.StatusFailed
		}
	}
	if !catalogFailed {
		t.Fatalf("the catalog image did not fail")
	}
	for _, f := range res.ClusterResources {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "kind: CatalogSource") || strings.Contains(string(b), "kind: ClusterCatalog") {
			t.Errorf("%s names the catalog that was not mirrored", filepath.Base(f))
		}
	}
}
