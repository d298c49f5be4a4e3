package registry

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/adaptive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// inFlight is a base transport that counts the manifest requests in flight
// (from the request to its response's headers, as the client's bound holds a
// slot): the most at once, and the most at once among those sent after
// throttledAfter 429 answers came back.
type inFlight struct {
	inner          http.RoundTripper
	throttledAfter int

	mu                sync.Mutex
	now, peak         int
	answered429       int
	peakAfterThrottle int
}

func (c *inFlight) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.Contains(req.URL.Path, "/manifests/") {
		return c.inner.RoundTrip(req)
	}
	c.mu.Lock()
	c.now++
	c.peak = max(c.peak, c.now)
	if c.throttledAfter > 0 && c.answered429 >= c.throttledAfter {
		c.peakAfterThrottle = max(c.peakAfterThrottle, c.now)
	}
	c.mu.Unlock()
	resp, err := c.inner.RoundTrip(req)
	c.mu.Lock()
	c.now--
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.answered429++
	}
	c.mu.Unlock()
	return resp, err
}

// readAtOnce reads the manifest n times at once through r.
func readAtOnce(t *testing.T, r *Client, repo, ref string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Manifest(context.Background(), repo, ref); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Over a link where every request costs a round trip, requests waiting for a
// slot let the bound on requests in flight grow past where it starts, never
// past the ceiling.
func TestRequestLimitGrowsWhenLatencyBound(t *testing.T) {
	be := registrytest.Start(t)
	p := imagetest.MustPush(t, be.Host()+"/ns/app:v1", fakeimage.Spec{Seed: 1, Layers: 1})
	wan := registrytest.NewWAN(t, be.URL(), registrytest.WANConfig{Latency: 20 * time.Millisecond})
	const ceiling = 40
	count := &inFlight{inner: http.DefaultTransport.(*http.Transport).Clone()}
	r := New(Options{Transport: count, MaxPerHost: ceiling})
	readAtOnce(t, r, wan.Host+"/ns/app", p.Digest.String(), 160)

	st := r.LimitStats()[wan.Host]
	if count.peak <= hostStart || st.Grows == 0 {
		t.Fatalf("at most %d requests in flight (the bound starts at %d), limit %+v: it did not grow", count.peak, hostStart, st)
	}
	if count.peak > ceiling || st.Peak > ceiling {
		t.Fatalf("%d requests in flight (limit %+v), above the ceiling %d", count.peak, st, ceiling)
	}
}

// A host answering 429 halves the bound: once the first round of requests
// (all answered 429) came back, the requests sent (their retries and the
// others) are never as many at once as before.
func TestRequestLimitBacksOffOn429(t *testing.T) {
	be := registrytest.Start(t)
	p := imagetest.MustPush(t, be.Host()+"/ns/app:v1", fakeimage.Spec{Seed: 1, Layers: 1})
	seq := make([]registrytest.Fault, hostStart) // the first round: every request in flight
	for i := range seq {
		seq[i] = registrytest.TooManyRequests
	}
	proxy := registrytest.NewFaultProxy(t, be.Host(), registrytest.FaultPlan{
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodGet && registrytest.PathKind(r.URL.Path) == "manifest"
		},
		Sequence: seq,
	})
	wan := registrytest.NewWAN(t, proxy.Host(), registrytest.WANConfig{Latency: 20 * time.Millisecond})
	count := &inFlight{inner: http.DefaultTransport.(*http.Transport).Clone(), throttledAfter: hostStart}
	r := New(Options{Transport: count, Retry: &retry.Policy{Times: 3, Base: time.Millisecond, Max: time.Millisecond}})
	// Few enough reads that growing back (1/limit per answer once cut) cannot
	// reach the start again: 8 + 64 answers.
	readAtOnce(t, r, wan.Host+"/ns/app", p.Digest.String(), 3*hostStart)

	st := r.LimitStats()[wan.Host]
	if proxy.Applied()[registrytest.TooManyRequests] != hostStart || st.Cuts == 0 {
		t.Fatalf("429s %v, limit %+v: want %d 429s and a cut", proxy.Applied(), st, hostStart)
	}
	if count.peak > hostStart {
		t.Fatalf("%d requests in flight at once, above the start %d (the bound grew from answers 429)", count.peak, hostStart)
	}
	if count.peakAfterThrottle == 0 || count.peakAfterThrottle >= hostStart {
		t.Fatalf("after the 429s %d requests in flight at once (before: %d): no back-off; limit %+v", count.peakAfterThrottle, count.peak, st)
	}
}

// TestCarriesBlob: blob reads, and the request a redirect leads to (a CDN's
// answer to one), take a free request slot before the other requests.
func TestCarriesBlob(t *testing.T) {
	redirected := &http.Response{StatusCode: http.StatusTemporaryRedirect}
	cases := []struct {
		method, url string
		redirect    bool
		want        bool
	}{
		{"GET", "http://r/v2/a/b/blobs/sha256:0123", false, true},
		{"GET", "https://cdn.example.com/blobs/abc?sig=x", true, true},
		{"GET", "http://r/v2/a/b/manifests/sha256:0123", false, false},
		{"HEAD", "http://r/v2/a/b/blobs/sha256:0123", false, false},
		{"GET", "http://r/v2/a/b/tags/list?n=1", false, false},
		{"GET", "http://r/v2/", false, false},
		{"POST", "http://r/v2/a/b/blobs/uploads/", false, false},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.redirect {
			req.Response = redirected
		}
		if got := carriesBlob(req); got != tc.want {
			t.Errorf("%s %s (after a redirect: %v): %v, want %v", tc.method, tc.url, tc.redirect, got, tc.want)
		}
	}
}

// TestInSlotTakesNoSlot: with the host's bound full, a request of an
// operation that holds its slots (endpoint.InSlot: a blob transfer of the
// copy engine) goes at once; any other waits for a slot.
func TestInSlotTakesNoSlot(t *testing.T) {
	be := registrytest.Start(t)
	p := imagetest.MustPush(t, be.Host()+"/ns/app:v1", fakeimage.Spec{Seed: 1, Layers: 1})
	r := New(Options{MaxPerHost: adaptive.Floor})
	ctx := context.Background()
	lim := r.HostLimit(be.Host())
	for range adaptive.Floor {
		if err := lim.AcquireFirst(ctx); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := r.Manifest(short, be.Host()+"/ns/app", p.Digest.String()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request outside a slot with the bound full: %v, want it to wait until its deadline", err)
	}
	if _, err := r.Manifest(endpoint.InSlot(ctx), be.Host()+"/ns/app", p.Digest.String()); err != nil {
		t.Fatalf("a request in a slot: %v", err)
	}
	for range adaptive.Floor {
		lim.Release(true)
	}
	if _, err := r.Manifest(ctx, be.Host()+"/ns/app", p.Digest.String()); err != nil {
		t.Fatal(err)
	}
	if st := r.LimitStats()[be.Host()]; st.Peak != adaptive.Floor || st.InUse != 0 {
		t.Fatalf("bound %+v: want a peak of %d (the slots taken by hand) and none in use", st, adaptive.Floor)
	}
}

// TestStreamingAnswerCutsTheBound: a streamed upload takes no slot, but its
// answer 503 cuts the host's bound as any other answer does.
func TestStreamingAnswerCutsTheBound(t *testing.T) {
	be := registrytest.Start(t)
	proxy := registrytest.NewFaultProxy(t, be.Host(), registrytest.FaultPlan{
		Match:    func(r *http.Request) bool { return r.Method == http.MethodPatch },
		Sequence: []registrytest.Fault{registrytest.Unavailable},
	})
	r := New(Options{MonolithicMax: 1 << 10, Retry: retry.Retries(0)})
	blob := bytes.Repeat([]byte("airlock"), 1<<10)
	d := endpoint.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	if err := r.PutBlob(context.Background(), proxy.Host()+"/ns/app", d, bytes.NewReader(blob)); endpoint.StatusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("PutBlob: %v, want the PATCH's 503", err)
	}
	if st := r.LimitStats()[proxy.Host()]; st.Cuts != 1 {
		t.Fatalf("bound %+v: want the 503 to cut it once", st)
	}
}
