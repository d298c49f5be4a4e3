package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// A registry that cannot delete a tag alone, where someone tags a planned
// manifest while the plan runs: the manifest is kept and named, the rest of
// the plan is deleted by digest. The registry is Distribution v3 behind a
// proxy that answers DELETE by tag as Distribution 2.x does (400
// DIGEST_INVALID) and, at the first, puts the tag "pinned" on one of the
// planned platform images.
func TestDeleteKeepsWhatAForeignTagPins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newMatrixEnv(t, registrytest.DistributionV3)
	if err := e.seed(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	backend, _ := url.Parse("http://" + e.dst.Host)
	rp := httputil.NewSingleHostReverseProxy(backend)
	var (
		once   sync.Once
		pinned digest.Digest
		pinErr error
		victim func() (string, digest.Digest) // repository path and digest to pin
	)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		if r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/manifests/") && !strings.HasPrefix(ref, "sha256:") {
			once.Do(func() {
				repo, d := victim()
				pinned = d
				pinErr = pin(e.dst, repo, d)
			})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"errors":[{"code":"DIGEST_INVALID","message":"provided digest did not match uploaded content"}]}`)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	host := strings.TrimPrefix(proxy.URL, "http://")
	e.auth = registrytest.WriteAuthFile(t, map[string]registrytest.Credentials{})

	ws := location.File(t.TempDir())
	o := e.options(t, "del")
	o.Workspace, o.Destination.Location = ws, location.Docker(host+"/del")
	if _, err := pipeline.Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	delCfg := filepath.Join(t.TempDir(), "delete-isc.yaml")
	writeMatrixFile(t, delCfg, "apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  additionalImages:\n  - name: "+e.extra+"\n")
	dopts := deletion.Options{Workspace: ws, Destination: o.Destination.Location, AuthFile: e.auth}
	gen := dopts
	gen.Generate, gen.ConfigPath = true, delCfg
	plan, err := pipeline.Delete(ctx, gen)
	if err != nil {
		t.Fatal(err)
	}
	var child workspace.PlannedManifest
	for _, m := range plan.Plan.Manifests {
		if m.ChildOf != "" {
			child = m
		}
	}
	if len(plan.Plan.Manifests) != 3 || child.ChildOf == "" {
		t.Fatalf("plan: %+v", plan.Plan.Manifests)
	}
	victim = func() (string, digest.Digest) { return "del/tools/debug", child.Digest }
	ex := dopts
	ex.PlanFile = plan.PlanFile
	res, err := pipeline.Delete(ctx, ex)
	if pinErr != nil || pinned == "" {
		t.Fatalf("the proxy did not pin: %v", pinErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !res.TagsWithManifests || len(res.Deleted) != 2 || len(res.Failed) != 0 || len(res.Kept) != 1 || res.Kept[0].Digest != pinned || !strings.Contains(res.Kept[0].Why, "pinned") {
		t.Fatalf("result: tags with manifests %v, deleted %+v, kept %+v, failed %+v", res.TagsWithManifests, res.Deleted, res.Kept, res.Failed)
	}
	var text bytes.Buffer
	res.WriteText(&text, true)
	for _, want := range []string{"cannot delete a tag alone", "kept " + host + "/del/tools/debug@" + pinned.String(), "tag(s) pinned"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, text.String())
		}
	}
	// The independent client: the pinned image and its tag stay, the rest is gone.
	if d, err := e.dst.Digest(ctx, "del/tools/debug:pinned"); err != nil || d != pinned.String() {
		t.Errorf("pinned tag serves %q (%v), want %s", d, err, pinned)
	}
	for _, m := range plan.Plan.Manifests {
		d, err := e.dst.Digest(ctx, "del/tools/debug@"+m.Digest.String())
		if err != nil {
			t.Fatal(err)
		}
		if (m.Digest == pinned) != (d != "") {
			t.Errorf("%s: served %q after the delete", m.Digest, d)
		}
	}
}

// pin tags the manifest d of repo "pinned" on tg, with go-containerregistry.
func pin(tg *registrytest.Target, repo string, d digest.Digest) error {
	src, err := tg.Ref(repo + "@" + d.String())
	if err != nil {
		return err
	}
	desc, err := remote.Get(src, tg.Remote(tg.Push)...)
	if err != nil {
		return err
	}
	dst, err := tg.Ref(repo + ":pinned")
	if err != nil {
		return err
	}
	return remote.Put(dst, desc, tg.Remote(tg.Push)...)
}
