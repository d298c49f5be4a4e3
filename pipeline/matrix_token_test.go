package pipeline_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/pipeline"
)

// A token that runs out at the worst moments of a mirror-to-mirror run: on a
// blob read at the source, on an upload carrying a blob (a monolithic PUT, a
// streamed PATCH of a blob over 4 MiB), on a manifest push. The run refreshes
// the token and still mirrors everything.
func TestTokenExpiresMidRequest(t *testing.T) {
	e := newMatrixEnv(t, registrytest.TokenAuth)
	if err := e.seed(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	big := e.src.Host + "/tools/big:1.0"
	if _, err := imagetest.Push(context.Background(), big, fakeimage.Spec{Seed: 7, Layers: 1, LayerSize: 5 << 20}, e.src.Remote(e.src.Push)...); err != nil {
		t.Fatal(err)
	}
	is := func(method, part string) func(*http.Request) bool {
		return func(r *http.Request) bool { return r.Method == method && strings.Contains(r.URL.Path, part) }
	}
	rules := map[string]func() int{
		"source blob GET":          e.src.Token.ExpireNext(1, is(http.MethodGet, "/blobs/sha256:")),
		"monolithic upload PUT":    e.dst.Token.ExpireNext(1, func(r *http.Request) bool { return is(http.MethodPut, "/blobs/uploads/")(r) && r.ContentLength > 0 }),
		"streamed upload PATCH":    e.dst.Token.ExpireNext(1, is(http.MethodPatch, "/blobs/uploads/")),
		"destination manifest PUT": e.dst.Token.ExpireNext(1, is(http.MethodPut, "/manifests/")),
	}
	o := opts(e.config(t, big))
	o.AuthFile, o.Workspace, o.Destination = e.auth, "file://"+t.TempDir(), "docker://"+e.dst.Host+"/expiry"
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		if res != nil && res.Copy != nil {
			for _, f := range res.Copy.Failed() {
				t.Logf("failed: %s: %v", f.Job.Source, f.Err)
			}
		}
		t.Fatal(err)
	}
	checkAtDestination(t, e, res, "expiry")
	for name, fired := range rules {
		if fired() != 1 {
			t.Errorf("%s: the token expired on %d requests, want 1", name, fired())
		}
	}
}
