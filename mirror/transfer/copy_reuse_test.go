package transfer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// isUploadPUT matches the commit of a blob upload.
// isUploadPUT matches the commits of the blobs copied (not the mount probe's).
func isUploadPUT(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/uploads/") && r.URL.Query().Get("digest") != oci.EmptyJSONDigest
}

// A commit answered 503 leaves the upload session open: the next attempt of
// the transfer is one PUT into it, not a new session and a PUT (under 10% of
// requests failing, that halves what one attempt risks).
func TestTransferReusesSessionAfterRefusedCommit(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 1, 1, func(i int) fakeimage.Spec { return fakeimage.Spec{Seed: 11, Layers: 2} })
	p := registrytest.NewFaultProxy(t, dst.Host(), registrytest.FaultPlan{
		Match:    isUploadPUT,
		Sequence: []registrytest.Fault{registrytest.Unavailable, registrytest.Unavailable, registrytest.Unavailable},
	})
	jobs := jobsFor(imgs, src.Host(), p.Host())
	dst.Reset()
	rep, err := Copy(ctx, testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry, ParallelLayers: 1})
	if err != nil {
		t.Fatal(err)
	}
	blobs := len(uniqueBlobs(imgs))
	c := dst.Counts()
	if c.Committed() != int64(blobs) || rep.BlobsSent != int64(blobs) {
		t.Fatalf("%d blobs committed (%d sent), want %d", c.Committed(), rep.BlobsSent, blobs)
	}
	if c.Sessions != int64(blobs)+1 { // and the mount probe's
		t.Errorf("%d upload sessions opened for %d blobs and 3 refused commits: a refused commit's session was not reused", c.Sessions, blobs)
	}
}

// A kept session the registry no longer knows (here: ended by the proxy right
// after refusing the commit) makes the next attempt open a new one.
func TestTransferReplacesAGoneSession(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 1, 1, func(i int) fakeimage.Spec { return fakeimage.Spec{Seed: 12, Layers: 1} })
	target, _ := url.Parse(dst.URL())
	rp := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isUploadPUT(r) && refused.Add(1) == 1 {
			// End the session at the registry, then refuse the commit.
			del, _ := http.NewRequest(http.MethodDelete, target.String()+r.URL.RequestURI(), nil)
			resp, err := http.DefaultClient.Do(del)
			if err != nil || resp.StatusCode != http.StatusNoContent {
				t.Errorf("ending the upload session at the registry: %v %v", err, resp)
			}
			if err == nil {
				resp.Body.Close()
			}
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	jobs := jobsFor(imgs, src.Host(), strings.TrimPrefix(proxy.URL, "http://"))
	if _, err := Copy(ctx, testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry, ParallelLayers: 1}); err != nil {
		t.Fatalf("copy after a gone session: %v", err)
	}
	if refused.Load() < 2 {
		t.Fatalf("%d commits seen, want the refused one and another", refused.Load())
	}
}
