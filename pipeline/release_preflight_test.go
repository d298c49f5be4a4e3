package pipeline

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
)

// closedURL is a URL on 127.0.0.1 nothing listens on any more.
func closedURL(t *testing.T, path string) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL + path
	srv.Close()
	return u
}

// The update service, the signature store and the graph-data tarball are
// probed before anything is read from the source registry or written to
// the mirror: each one down stops the run with its URL and the flag that
// changes it.
func TestReleasePreflight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 2})
	svc := cincinnatitest.New(t)
	svc.Serve("stable-4.15", releasetest.GraphJSON(t, "stable-4.15", releasetest.Node{Version: "4.15.1", Payload: e.rel.PayloadRef()}))
	channel := "    channels:\n    - name: stable-4.15\n"
	deadGraph, deadStore, deadData := closedURL(t, "/graph"), closedURL(t, "/sigs"), closedURL(t, "/graph-data")
	cases := []struct {
		name, stanza string
		rel          ReleaseOptions
		want         []string
	}{
		{"update service", channel, ReleaseOptions{GraphURL: deadGraph, SignatureURL: e.store.URL}, []string{"preflight", "update service", deadGraph, "--graph-url"}},
		{"signature store", channel, ReleaseOptions{GraphURL: svc.URL, SignatureURL: deadStore}, []string{"preflight", "signature store", deadStore, "--release-signature-url"}},
		{"graph data", "    release: " + e.rel.Ref + "\n    graph: true\n", ReleaseOptions{SignatureURL: e.store.URL, GraphDataURL: deadData}, []string{"preflight", deadData, "--graph-data-url", "--graph-data-file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.src.Reset()
			dst := registrytest.Start(t)
			tc.rel.SignatureKeys = e.keys
			o := Options{ConfigPath: releaseConfig(t, tc.stanza), Releases: tc.rel}
			o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), location.File(t.TempDir())
			_, err := Mirror(ctx, o)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Mirror: %v, want an error saying %q", err, w)
				}
			}
			if c := e.src.Counts(); c.ManifestGET+c.ManifestHEAD+c.BlobGET > 0 {
				t.Errorf("the source registry was read (%+v) before the services were checked", c)
			}
			reg, _ := name.NewRegistry(dst.Host())
			if repos, err := remote.Catalog(ctx, reg); err != nil || len(repos) > 0 {
				t.Errorf("the mirror holds %v (%v), want nothing", repos, err)
			}
		})
	}
}
