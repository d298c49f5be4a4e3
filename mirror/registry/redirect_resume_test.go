package registry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// A blob the registry redirects to a CDN, whose stream breaks midway, is
// resumed at the CDN's URL, not by asking the registry (and its redirect)
// again; when the CDN refuses the resumed read (an expired URL), the registry
// is asked for a new one.
func TestBlobResumesAtTheRedirectedURL(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/r/a:1", fakeimage.Spec{Seed: 6, Layers: 1, LayerSize: 256 << 10})
	m, err := New(Options{Retry: mirrortest.FastRetry}).Manifest(context.Background(), reg.Host()+"/r/a", p.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	refs, err := oci.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	layer := refs.Blobs[1]
	for _, tc := range []struct {
		name          string
		resume        registrytest.Fault // what the CDN does with the resumed read
		registry, cdn int64              // blob GETs each saw
	}{
		{"CDN resumes", registrytest.Pass, 1, 2},
		{"CDN refuses the resume", registrytest.Unavailable, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cdn := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{Sequence: []registrytest.Fault{registrytest.CutMidBody, tc.resume}})
			target, _ := url.Parse(reg.URL())
			rp := httputil.NewSingleHostReverseProxy(target)
			var redirects atomic.Int64
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && registrytest.PathKind(r.URL.Path) == "blob" {
					redirects.Add(1)
					http.Redirect(w, r, "http://"+cdn.Host()+r.URL.Path+"?sig=secret", http.StatusTemporaryRedirect)
					return
				}
				rp.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			r := New(Options{Retry: mirrortest.FastRetry})
			rc, err := r.Blob(context.Background(), strings.TrimPrefix(front.URL, "http://")+"/r/a", layer)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, oci.NewVerifier(rc, layer))
			rc.Close()
			if err != nil || n != layer.Size {
				t.Fatalf("read %d of %d bytes: %v", n, layer.Size, err)
			}
			if got := redirects.Load(); got != tc.registry {
				t.Errorf("the registry was asked for the blob %d times, want %d", got, tc.registry)
			}
			if got := int64(cdn.Requests()); got != tc.cdn {
				t.Errorf("the CDN served %d reads, want %d (faults %v)", got, tc.cdn, cdn.Applied())
			}
		})
	}
}
