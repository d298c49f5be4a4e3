package registrytest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// fakeClock is a clock whose Sleep only moves it on: what the link charged
// is how far it moved.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return ctx.Err()
}

func (c *fakeClock) elapsed(since time.Time) time.Duration { return c.Now().Sub(since) }

func TestBucket(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		ms   int
		n    float64
		wait time.Duration
	}
	for _, tc := range []struct {
		name        string
		rate, burst float64
		steps       []step
	}{
		{"unlimited", 0, 0, []step{{0, 1e9, 0}, {0, 1e9, 0}}},
		{"within the burst", 1000, 500, []step{{0, 200, 0}, {0, 300, 0}}},
		{"debt waits at the rate", 1000, 500, []step{{0, 500, 0}, {0, 1000, time.Second}}},
		{"later takers queue behind the debt", 1000, 500, []step{{0, 1500, time.Second}, {0, 1000, 2 * time.Second}}},
		{"refills while idle, up to the burst", 1000, 500, []step{{0, 500, 0}, {10_000, 500, 0}, {10_000, 100, 100 * time.Millisecond}}},
		{"time passed pays the debt", 1000, 0, []step{{0, 1000, time.Second}, {1000, 1000, time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBucket(tc.rate, tc.burst)
			for i, s := range tc.steps {
				if got := b.take(at(s.ms), s.n); got != s.wait {
					t.Errorf("step %d: take(%d ms, %v) waits %v, want %v", i, s.ms, s.n, got, s.wait)
				}
			}
		})
	}
}

func TestBucketAllow(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := newBucket(2, 2) // 2 requests a second, 2 at once
	for i, want := range []struct {
		at   time.Duration
		ok   bool
		wait time.Duration
	}{
		{0, true, 0}, {0, true, 0}, {0, false, 500 * time.Millisecond},
		{250 * time.Millisecond, false, 250 * time.Millisecond},
		{500 * time.Millisecond, true, 0}, {500 * time.Millisecond, false, 500 * time.Millisecond},
	} {
		ok, wait := b.allow(t0.Add(want.at))
		if ok != want.ok || wait != want.wait {
			t.Errorf("request %d at %v: allow = %v, %v; want %v, %v", i, want.at, ok, wait, want.ok, want.wait)
		}
	}
}

// seedWAN pushes a one-layer image of about size bytes to a registry of the
// given kind and returns the registry and the layer.
func seedWAN(t *testing.T, size int64) (*Target, v1.Layer) {
	t.Helper()
	tg := StartKind(t, DistributionV3)
	img, err := random.Image(size, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := tg.Ref("wan/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, tg.Remote(tg.Push)...); err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	return tg, layers[0]
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, int64) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, n
}

// TestWANLinkCharges checks what the link charges a client, on a fake clock:
// the handshake once per connection, the round trip per request, and a body
// at the bandwidth cap (less the bucket's burst).
func TestWANLinkCharges(t *testing.T) {
	tg, layer := seedWAN(t, 1<<20)
	clk := newFakeClock()
	var mu sync.Mutex
	var seen []string
	var took []time.Duration
	observe := func(method, path string, status int, start, end time.Time) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s %s %d", method, path, status))
		took = append(took, end.Sub(start))
	}
	w := NewWAN(t, tg.Host, WANConfig{Latency: 50 * time.Millisecond, Handshake: 100 * time.Millisecond, Bandwidth: 1_000_000, Clock: clk, Observe: observe})
	dgst, _ := layer.Digest()
	size, _ := layer.Size()
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	blobURL := "http://" + w.Host + "/v2/wan/app/blobs/" + dgst.String()

	start := clk.Now()
	resp, n := get(t, c, blobURL)
	if resp.StatusCode != http.StatusOK || n != size {
		t.Fatalf("GET blob through the WAN: %s, %d bytes; want 200 and %d bytes", resp.Status, n, size)
	}
	burst := int64(linkChunk) // max(64 KiB, 10 ms at 1 MB/s)
	want := 150*time.Millisecond + time.Duration(float64(size-burst)/1e6*float64(time.Second))
	if got := clk.elapsed(start); got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("first GET of %d bytes charged %v, want %v (handshake + round trip + (size - burst) / cap)", size, got, want)
	}

	// The link idled through the handshake and the round trip alone (the
	// fake clock: the registry answers in no time).
	if idle := w.Stats().Idle; idle.RoundTrips != 150*time.Millisecond || idle.Total() != idle.RoundTrips || idle.Chunks == 0 || idle.Oversleep != 0 {
		t.Errorf("link idle %+v, want the 150ms of the handshake and round trip alone, and chunks that waited no longer than charged", idle)
	}

	// The same connection again: a round trip, no handshake, and the whole
	// body at the cap (the bucket is in debt no more, but empty).
	start = clk.Now()
	get(t, c, "http://"+w.Host+"/v2/")
	if got := clk.elapsed(start); got != 50*time.Millisecond {
		t.Errorf("GET /v2/ on a kept-alive connection charged %v, want the 50ms round trip alone", got)
	}
	mu.Lock()
	wantSeen := []string{fmt.Sprintf("GET /v2/wan/app/blobs/%s 200", dgst), "GET /v2/ 200"}
	if strings.Join(seen, "\n") != strings.Join(wantSeen, "\n") {
		t.Errorf("observed:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(wantSeen, "\n"))
	} else if took[0] < want-time.Millisecond || took[0] > want+time.Millisecond || took[1] != 50*time.Millisecond {
		t.Errorf("observed spans %v, want about %v and 50ms: what the link charged", took, want)
	}
	mu.Unlock()
	s := w.Stats()
	if s.Connections != 1 || s.Requests != 2 || s.BytesDown < size {
		t.Errorf("stats %+v: want 1 connection, 2 requests, at least %d bytes down", s, size)
	}
}

func TestWANRateLimit(t *testing.T) {
	tg := StartKind(t, DistributionV3)
	clk := newFakeClock() // never moves: no latency configured
	w := NewWAN(t, tg.Host, WANConfig{RequestRate: 0.5, RequestBurst: 2, Clock: clk})
	c := &http.Client{}
	defer c.CloseIdleConnections()
	for i, want := range []struct {
		code       int
		retryAfter string
	}{{200, ""}, {200, ""}, {429, "2"}, {429, "2"}} {
		resp, _ := get(t, c, "http://"+w.Host+"/v2/")
		if resp.StatusCode != want.code || resp.Header.Get("Retry-After") != want.retryAfter {
			t.Errorf("request %d: %s, Retry-After %q; want %d, %q", i, resp.Status, resp.Header.Get("Retry-After"), want.code, want.retryAfter)
		}
	}
	clk.Sleep(context.Background(), 2*time.Second)
	if resp, _ := get(t, c, "http://"+w.Host+"/v2/"); resp.StatusCode != http.StatusOK {
		t.Errorf("after Retry-After: %s, want 200", resp.Status)
	}
	if got := w.Stats().Throttled; got != 2 {
		t.Errorf("Throttled = %d, want 2", got)
	}
}

// TestWANTokenAuthAndCDN pulls anonymously and pushes as WANUser through a
// WAN with token auth and the CDN host, with go-containerregistry.
func TestWANTokenAuthAndCDN(t *testing.T) {
	tg, layer := seedWAN(t, 64<<10)
	w := NewWAN(t, tg.Host, WANConfig{TokenAuth: true, CDN: true, Bandwidth: 1 << 30})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := name.ParseReference(w.Host+"/wan/app:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(src, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("anonymous pull through the WAN: %v", err)
	}
	dgst, _ := layer.Digest()
	l, err := img.LayerByDigest(dgst)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if err != nil {
		t.Fatalf("blob through the CDN host: %v", err)
	}
	if size, _ := layer.Size(); n != size {
		t.Errorf("blob: %d bytes, want %d", n, size)
	}

	dst, _ := name.ParseReference(w.Host+"/wan/copy:v1", name.Insecure)
	if err := remote.Write(dst, img, remote.WithContext(ctx)); err == nil {
		t.Error("anonymous push through the WAN succeeded; want it refused")
	}
	if err := remote.Write(dst, img, remote.WithContext(ctx), remote.WithAuth(&authn.Basic{Username: WANUser.Username, Password: WANUser.Password})); err != nil {
		t.Fatalf("push as %s through the WAN: %v", WANUser.Username, err)
	}
	if d, err := tg.Digest(ctx, "wan/copy:v1"); err != nil || d == "" {
		t.Errorf("pushed image at the registry behind: %q, %v", d, err)
	}
	s := w.Stats()
	if s.TokenRequests < 2 || s.Challenges < 2 || s.Redirects < 1 {
		t.Errorf("stats %+v: want token requests and challenges for pull and push, a CDN redirect", s)
	}
	if s.BytesUp == 0 {
		t.Errorf("stats %+v: the push sent no bytes up", s)
	}
}

func TestWANPreset(t *testing.T) {
	for _, tc := range []struct {
		name      string
		latency   time.Duration
		bandwidth int64
	}{{"lan", time.Millisecond, 1_000_000_000}, {"wan", 50 * time.Millisecond, 50_000_000}, {"far", 150 * time.Millisecond, 20_000_000}, {"rtt50", 50 * time.Millisecond, 0}} {
		c, err := WANPreset(tc.name)
		if err != nil || c.Latency != tc.latency || c.Bandwidth != tc.bandwidth || !c.TokenAuth || !c.CDN {
			t.Errorf("WANPreset(%q) = %v, %v; want %v RTT, %d B/s, token auth and CDN", tc.name, c, err, tc.latency, tc.bandwidth)
		}
	}
	if _, err := WANPreset("moon"); err == nil || err.Error() != `unknown WAN preset "moon" (want one of far, lan, rtt50, wan)` {
		t.Errorf("WANPreset(moon) error = %v", err)
	}
	if _, err := StartWAN("::not a url", WANConfig{}); err == nil {
		t.Error("StartWAN with a bad upstream: no error")
	}
}

func TestLinkMeter(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// A link of 1000 bytes a second holding 100 (100 ms of it): a state
	// held for 300 ms after the bucket filled loses 200 ms... and so on.
	type event struct {
		ms int
		f  func(m *linkMeter)
	}
	inc := func(p func(m *linkMeter) *int, d int) func(m *linkMeter) {
		return func(m *linkMeter) { *p(m) += d }
	}
	requests := func(m *linkMeter) *int { return &m.requests }
	answering := func(m *linkMeter) *int { return &m.answering }
	bodies := func(m *linkMeter) *int { return &m.bodies }
	sleeping := func(m *linkMeter) *int { return &m.sleeping }
	writing := func(m *linkMeter) *int { return &m.writing }
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		events []event
		end    int
		want   LinkIdle
	}{
		{"nothing asked", nil, 500, LinkIdle{NoRequest: 500 * ms}},
		{"a round trip", []event{{0, inc(requests, 1)}, {50, inc(requests, -1)}}, 50, LinkIdle{RoundTrips: 50 * ms}},
		{"a body waiting for its registry", []event{{0, inc(requests, 1)}, {5, inc(answering, 1)}, {10, inc(answering, -1)}, {10, inc(bodies, 1)}, {40, inc(bodies, -1)}, {40, inc(requests, -1)}}, 40,
			LinkIdle{RoundTrips: 5 * ms, Answering: 5 * ms, Upstream: 30 * ms}},
		{"a chunk not woken", []event{{0, inc(bodies, 1)}, {0, inc(sleeping, 1)}, {20, inc(sleeping, -1)}}, 20, LinkIdle{Late: 20 * ms}},
		{"a chunk not taken", []event{{0, inc(bodies, 1)}, {0, inc(writing, 1)}, {20, inc(writing, -1)}}, 20, LinkIdle{Blocked: 20 * ms}},
		{"a waiting chunk outweighs the others", []event{{0, inc(requests, 1)}, {0, inc(bodies, 1)}, {0, inc(writing, 1)}, {0, inc(sleeping, 1)}}, 25,
			LinkIdle{Late: 25 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBucket(1000, 100)
			b.meter = &linkMeter{}
			b.idle(t0) // primed full: from here on it loses what flows in
			for _, e := range tc.events {
				b.meterEvent(at(e.ms), e.f)
			}
			if got := b.idle(at(tc.end)); got != tc.want {
				t.Errorf("idle = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("a late chunk's time is given back", func(t *testing.T) {
		b := newBucket(1000, 100)
		b.meter = &linkMeter{}
		b.meterEvent(t0, func(m *linkMeter) { m.requests, m.bodies = 1, 1 })
		if d := b.take(t0, 200); d != 100*ms {
			t.Fatalf("take 200 waits %v, want 100ms", d)
		}
		b.meterEvent(t0, func(m *linkMeter) { m.sleeping++ })
		// Woken at 300 ms, 200 ms late: 100 ms of the link overflowed the
		// bucket, given back to the next take.
		b.meterEvent(at(300), func(m *linkMeter) { m.sleeping-- })
		if got := b.idle(at(300)); got.Late != 100*ms || got.Total() != 0 {
			t.Errorf("idle = %+v, want 100ms late and none counted", got)
		}
		if d := b.take(at(300), 200); d != 0 {
			t.Errorf("take 200 after the late wake waits %v, want 0 (100 in the bucket, 100 given back)", d)
		}
		// Nothing to send: what is owed is forgotten.
		b.meterEvent(at(300), func(m *linkMeter) { m.bodies = 0 })
		b.meterEvent(at(300), func(m *linkMeter) { m.sleeping++ })
		b.meterEvent(at(600), func(m *linkMeter) { m.sleeping-- })
		b.meterEvent(at(900), func(m *linkMeter) {})
		if d := b.take(at(900), 200); d != 100*ms {
			t.Errorf("take 200 after an idle link waits %v, want 100ms (nothing owed)", d)
		}
	})
	t.Run("debt is not idleness", func(t *testing.T) {
		b := newBucket(1000, 100)
		b.meter = &linkMeter{}
		b.idle(t0)
		if d := b.take(t0, 600); d != 500*ms {
			t.Fatalf("take 600 waits %v, want 500ms", d)
		}
		// Busy until 500 ms, then 100 ms to fill, then idle.
		if got := b.idle(at(700)); got.Total() != 100*ms || got.NoRequest != 100*ms {
			t.Errorf("idle = %+v, want 100ms with no request", got)
		}
	})
}

// TestWANBlobRoot: with BlobRoot the CDN serves blobs from the registry's
// files (whole, and a range) and the registry behind sees no blob read; a
// blob the repository does not link is not redirected.
func TestWANBlobRoot(t *testing.T) {
	reg := Start(t, WithFilesystem())
	img, err := random.Image(200<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(reg.Host()+"/wan/app:v1", name.Insecure)
	if err := remote.Write(ref, img, remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	dgst, _ := layers[0].Digest()
	size, _ := layers[0].Size()
	want, _ := layers[0].Compressed()
	body, _ := io.ReadAll(want)
	want.Close()
	w := NewWAN(t, reg.Host(), WANConfig{CDN: true, Bandwidth: 1 << 30, BlobRoot: reg.Root()})
	reg.Reset()
	c := &http.Client{}
	defer c.CloseIdleConnections()
	url := "http://" + w.Host + "/v2/wan/app/blobs/" + dgst.String()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != string(body) || resp.Header.Get("Docker-Content-Digest") != dgst.String() {
		t.Fatalf("GET blob: %s, %d bytes, digest %q; want 200, the layer's %d bytes, %s", resp.Status, len(got), resp.Header.Get("Docker-Content-Digest"), size, dgst)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Range", "bytes=100-")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || string(got) != string(body[100:]) {
		t.Errorf("GET blob from byte 100: %s, %d bytes; want 206 and %d bytes", resp.Status, len(got), len(body)-100)
	}
	if c := reg.Counts(); c.BlobGET+c.BlobHEAD != 0 {
		t.Errorf("the registry behind answered %d blob GETs and %d HEADs; want none (the blob's file served)", c.BlobGET, c.BlobHEAD)
	}
	if s := w.Stats(); s.Redirects != 2 || s.BlobFileBytes != 2*size-100 {
		t.Errorf("stats %+v: want 2 redirects and %d blob bytes from files", s, 2*size-100)
	}
	// Not linked by this repository: the registry answers (404), no redirect.
	resp, err = c.Get("http://" + w.Host + "/v2/wan/other/blobs/" + dgst.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || w.Stats().Redirects != 2 {
		t.Errorf("GET of a blob another repository does not link: %s, %d redirects; want 404 and no redirect", resp.Status, w.Stats().Redirects)
	}
}
