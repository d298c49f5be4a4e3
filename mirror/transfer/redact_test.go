package transfer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// A registry redirecting blob downloads to a pre-signed CDN URL that fails: the
// error in the report must not carry the URL's signature.
func TestRedirectSignatureNotInErrors(t *testing.T) {
	be := registrytest.Start(t)
	p := imagetest.MustPush(t, be.Host()+"/a/b:1", fakeimage.Spec{Seed: 1, Layers: 1})
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer cdn.Close()
	u, _ := url.Parse(be.URL())
	rp := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/sha256:") && r.Method == http.MethodGet {
			http.Redirect(w, r, cdn.URL+"/blob?X-Amz-Credential=AKIASECRET&X-Amz-Signature=deadbeefSECRET", http.StatusTemporaryRedirect)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer front.Close()
	host := strings.TrimPrefix(front.URL, "http://")
	dst := registrytest.Start(t)
	jobs := []Job{{Source: host + "/a/b", Digest: p.Digest, Dest: dst.Host() + "/a/b", Tags: []string{"1"}}}
	reg := registry.New(registry.Options{Retry: retry.Retries(0)})
	rep, err := Copy(context.Background(), reg, reg, jobs, Options{Retry: retry.Retries(0)})
	if err == nil || rep.Images[0].Status != StatusFailed {
		t.Fatalf("copy through a broken CDN succeeded: %v", err)
	}
	if strings.Contains(rep.Images[0].Err, "SECRET") || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("signature in the error: %s", rep.Images[0].Err)
	}
}
