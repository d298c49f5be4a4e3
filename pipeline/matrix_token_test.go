package pipeline_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// A token that runs out at the worst moment of a mirror-to-mirror run: on a
// blob read at the source, on an upload carrying a blob (a monolithic PUT, a
// streamed PATCH of a blob over 4 MiB), on a manifest push; one moment per
// run. The run refreshes the token and still mirrors everything.
func TestTokenExpiresMidRequest(t *testing.T) {
	t.Parallel()
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
	for _, tc := range []struct {
		name  string
		on    *registrytest.TokenServer
		match func(*http.Request) bool
	}{
		{"source-blob-GET", e.src.Token, is(http.MethodGet, "/blobs/sha256:")},
		{"monolithic-upload-PUT", e.dst.Token, func(r *http.Request) bool { return is(http.MethodPut, "/blobs/uploads/")(r) && r.ContentLength > 0 }},
		{"streamed-upload-PATCH", e.dst.Token, is(http.MethodPatch, "/blobs/uploads/")},
		{"manifest-PUT", e.dst.Token, is(http.MethodPut, "/manifests/")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fired := tc.on.ExpireNext(1, tc.match)
			ns := "expiry-" + strings.ToLower(tc.name)
			o := opts(e.config(t, big))
			o.AuthFile, o.Workspace, o.Destination.Location = e.auth, location.File(t.TempDir()), location.Docker(e.dst.Host+"/"+ns)
			res, err := pipeline.Mirror(context.Background(), o)
			if err != nil {
				if res != nil && res.Copy != nil {
					for _, f := range res.Copy.Failed() {
						t.Logf("failed: %s: %v", f.Job.Source, f.Err)
					}
				}
				t.Fatal(err)
			}
			checkAtDestination(t, e, res, ns)
			if fired() != 1 {
				t.Errorf("the token expired on %d requests, want 1", fired())
			}
		})
	}
}
