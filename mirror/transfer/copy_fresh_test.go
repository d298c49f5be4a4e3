package transfer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// orderProxy is a reverse proxy in front of reg that records, in order, the
// kind of each request ("HEAD manifest", "GET tags", "PUT upload", ...; the
// mount probe's commit is "PUT probe").
func orderProxy(t *testing.T, reg *registrytest.Registry) (host string, order func() []string) {
	t.Helper()
	u, err := url.Parse(reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		kind := registrytest.PathKind(r.URL.Path)
		if r.URL.Query().Get("digest") == oci.EmptyJSONDigest {
			kind = "probe" // the registry client's mount probe
		}
		seen = append(seen, r.Method+" "+kind)
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestFreshDestinationFirstBlob: into a destination that holds none of the
// images asked about, the first blob is not held back while the destination
// is asked about every image of the run (to find blobs to mount that a new
// mirror cannot hold): at most a batch of questions comes before it. Images
// the destination does hold are still found and their blobs mounted
// (TestIncrementalRunMountsFromEarlierRuns).
func TestFreshDestinationFirstBlob(t *testing.T) {
	src, dst := registrytest.Start(t), registrytest.Start(t)
	const n = 4 * discoverBatch
	imgs := pushImages(t, src.Host(), n, n, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(500 + i), Layers: 1, LayerSize: 512}
	})
	host, order := orderProxy(t, dst)
	jobs := jobsFor(imgs, src.Host(), host)
	if _, err := Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry, ParallelImages: 1}); err != nil {
		t.Fatal(err)
	}
	checkDest(t, jobs)
	questions := 0
	for _, r := range order() {
		if r == "PUT upload" {
			break
		}
		if r == "HEAD manifest" || r == "GET tags" {
			questions++
		}
	}
	if questions > 2*discoverBatch {
		t.Fatalf("%d questions about images before the first blob was sent (of %d images), want at most %d: %v", questions, n, 2*discoverBatch, order()[:min(len(order()), 80)])
	}
}
