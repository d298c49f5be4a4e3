package registrytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// WANConfig is the link and the registry front the WAN simulator puts between
// clients and a registry on 127.0.0.1, shaped like quay.io or
// registry.redhat.io seen from a datacenter: round trips, a connection set-up
// cost, one shared bandwidth cap, token auth, blobs served by a CDN host, and
// a request-rate limit answered with 429.
type WANConfig struct {
	// Latency is added to every request (its round trip), token requests and
	// CDN requests included.
	Latency time.Duration
	// Handshake is added to the first request of every connection: the TCP
	// and TLS set-up round trips a new connection pays.
	Handshake time.Duration
	// Bandwidth is the cap in bytes a second each way, shared by every
	// connection to the registry and to its CDN host (0: no cap).
	Bandwidth int64
	// RequestRate is how many requests a second the registry host accepts
	// (RequestBurst at once) before answering 429 with Retry-After (0: no
	// limit). The CDN host is not limited.
	RequestRate  float64
	RequestBurst int
	// TokenAuth puts token auth in front of the registry: a 401 Bearer
	// challenge, the token endpoint (a TokenServer) at /v2/auth on the
	// registry's host, short-lived tokens per repository scope checked by
	// Distribution's own token access controller. WANUser may push; anonymous
	// clients may pull (a public repository). The registry behind is reached
	// without credentials.
	TokenAuth bool
	// TokenTTL is how long a token lives (default 5 minutes, quay.io's).
	TokenTTL time.Duration
	// CDN answers blob GETs with 307 to a second host (on the same link) with
	// an expiring signed URL, as quay.io does.
	CDN bool
	// BlobRoot, with CDN, is the storage folder of the filesystem registry
	// behind the simulator (the --root of `airlock registry serve`): the CDN
	// serves blob bodies from its files, as object storage behind a CDN
	// does, and the registry host redirects a blob GET when the repository
	// links the blob there, neither asking the registry. On a machine whose
	// cores the client shares, the registry's work per blob (its storage
	// lookups, a 4 MiB read buffer per blob read) and a hop through a proxy
	// are no longer charged to the client's time. Empty: both ask the
	// registry.
	BlobRoot string
	// Listen is the registry host's address (default "127.0.0.1:0", a free
	// port); the CDN host always takes a free port.
	Listen string
	// Clock is the simulator's time (default: the real one).
	Clock Clock
	// Observe, when set, is called after every request on either host with
	// its method, path, status and when it arrived and finished (the link's
	// costs included): benchmarks find out when a given blob was fetched.
	Observe func(method, path string, status int, start, end time.Time)
}

// WANUser may push and pull through a TokenAuth WAN.
var WANUser = Credentials{"airlock", "wan-secret"}

// WANPresets are the links of `airlock-bench wan-proxy --preset` and the
// benchmarks: a LAN, a WAN (50 ms, 50 MB/s), a far WAN (150 ms, 20 MB/s) and
// rtt50, a link whose round trips alone bound a mirror (50 ms, no bandwidth
// cap, a request-rate limit a mirror never reaches).
// Handshake is two round trips (TCP, then TLS 1.3); every preset has token
// auth, the CDN host and a request-rate limit well above what a mirror needs
// (so that 429s are rare, not absent under bursts).
var WANPresets = map[string]WANConfig{
	"lan": {Latency: time.Millisecond, Handshake: 2 * time.Millisecond, Bandwidth: 1_000_000_000,
		RequestRate: 1000, RequestBurst: 1000, TokenAuth: true, CDN: true},
	"wan": {Latency: 50 * time.Millisecond, Handshake: 100 * time.Millisecond, Bandwidth: 50_000_000,
		RequestRate: 200, RequestBurst: 200, TokenAuth: true, CDN: true},
	"rtt50": {Latency: 50 * time.Millisecond, Handshake: 100 * time.Millisecond,
		RequestRate: 1000, RequestBurst: 1000, TokenAuth: true, CDN: true},
	"far": {Latency: 150 * time.Millisecond, Handshake: 300 * time.Millisecond, Bandwidth: 20_000_000,
		RequestRate: 100, RequestBurst: 100, TokenAuth: true, CDN: true},
}

// WANPreset returns the preset named name, or an error listing them.
func WANPreset(name string) (WANConfig, error) {
	c, ok := WANPresets[name]
	if !ok {
		var names []string
		for n := range WANPresets {
			names = append(names, n)
		}
		sort.Strings(names)
		return WANConfig{}, fmt.Errorf("unknown WAN preset %q (want one of %s)", name, strings.Join(names, ", "))
	}
	return c, nil
}

// String describes the link ("50ms RTT, 100ms handshake, 50 MB/s, …").
func (c WANConfig) String() string {
	s := fmt.Sprintf("%v RTT, %v handshake", c.Latency, c.Handshake)
	if c.Bandwidth > 0 {
		s += fmt.Sprintf(", %.0f MB/s", float64(c.Bandwidth)/1e6)
	}
	if c.RequestRate > 0 {
		s += fmt.Sprintf(", %g req/s", c.RequestRate)
	}
	if c.TokenAuth {
		s += ", token auth"
	}
	if c.CDN {
		s += ", CDN redirects"
	}
	return s
}

// WANStats is what the simulator saw.
type WANStats struct {
	// Requests counts every request on both hosts; Connections the
	// connections set up (each paid Handshake).
	Requests, Connections int64
	// TokenRequests went to the token endpoint; Challenges were answered 401;
	// Throttled were answered 429; Redirects sent a blob GET to the CDN host.
	TokenRequests, Challenges, Throttled, Redirects int64
	// BytesDown is every response body byte, BytesUp every request body byte.
	BytesDown, BytesUp int64
	// BlobFileBytes is the blob body bytes the CDN served from BlobRoot's
	// files (the registry behind did not see them).
	BlobFileBytes int64
	// Idle is how long the downstream link idled and why (with a
	// bandwidth cap; zero without).
	Idle LinkIdle
}

// WAN is a running simulator: a registry host (Host) and, with CDN, a blob
// host, both on 127.0.0.1 and behind the same link.
type WAN struct {
	// Host is the registry's "127.0.0.1:PORT" as clients reach it.
	Host string
	// Upstream is the registry behind ("http://127.0.0.1:PORT").
	Upstream string
	Config   WANConfig

	clk        Clock
	down, up   *bucket
	reqs       *bucket
	token      *TokenServer
	cdn        *CDN
	dir        string
	servers    []*http.Server
	requests   atomic.Int64
	conns      atomic.Int64
	tokens     atomic.Int64
	challenges atomic.Int64
	throttled  atomic.Int64
	bytesDown  atomic.Int64
	bytesUp    atomic.Int64
}

// NewWAN starts a simulator in front of upstream ("http://127.0.0.1:PORT" or
// "127.0.0.1:PORT"), stopped with t.Cleanup.
func NewWAN(t testing.TB, upstream string, c WANConfig) *WAN {
	t.Helper()
	w, err := StartWAN(upstream, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// StartWAN starts a simulator in front of upstream; Close stops it.
func StartWAN(upstream string, c WANConfig) (*WAN, error) {
	if !strings.Contains(upstream, "://") {
		upstream = "http://" + upstream
	}
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("WAN simulator: upstream %q is not a registry URL (want http://127.0.0.1:PORT)", upstream)
	}
	w := &WAN{Upstream: upstream, Config: c, clk: c.Clock}
	if w.clk == nil {
		w.clk = realClock{}
	}
	if c.Bandwidth > 0 {
		burst := float64(max(linkChunk, c.Bandwidth/100)) // 10 ms of the link
		w.down, w.up = newBucket(float64(c.Bandwidth), burst), newBucket(float64(c.Bandwidth), burst)
		w.down.meter = &linkMeter{}
	}
	if c.RequestRate > 0 {
		w.reqs = newBucket(c.RequestRate, float64(max(1, c.RequestBurst)))
	}
	origin := httputil.NewSingleHostReverseProxy(u)
	origin.Transport = &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		DisableCompression:    true,
	}
	origin.ErrorLog = log.New(io.Discard, "", 0)
	var front http.Handler = origin
	ok := false
	defer func() {
		if !ok {
			_ = w.Close()
		}
	}()
	if c.CDN {
		w.cdn = newCDNHandler(time.Hour)
		if c.BlobRoot != "" {
			w.cdn.store = &blobStore{root: c.BlobRoot}
		}
		front = w.cdn.front(origin)
		cdnHost, err := w.serve(w.link(http.HandlerFunc(w.cdn.serve), false))
		if err != nil {
			return nil, err
		}
		// A CDN is another domain than the registry's (quay.io's blobs come from
		// cloudfront.net): clients drop the registry's Authorization header on
		// the redirect only for another host name, and the CDN refuses one (as
		// S3 does), so it is named localhost while the registry is 127.0.0.1.
		w.cdn.base = "http://" + strings.Replace(cdnHost, "127.0.0.1", "localhost", 1)
	}
	// The registry's listener first: the token realm names its address.
	addr := c.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("WAN simulator: %w", err)
	}
	w.Host = ln.Addr().String()
	if c.TokenAuth {
		if front, err = w.tokenFront(front); err != nil {
			ln.Close()
			return nil, err
		}
	}
	w.serveOn(ln, w.link(front, true))
	ok = true
	return w, nil
}

type connKey struct{}

// connState is one client connection: set up (Handshake paid) or not yet.
type connState struct{ setUp atomic.Bool }

func (w *WAN) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("WAN simulator: %w", err)
	}
	w.serveOn(ln, h)
	return ln.Addr().String(), nil
}

func (w *WAN) serveOn(ln net.Listener, h http.Handler) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, &connState{})
		},
	}
	w.servers = append(w.servers, srv)
	go func() { _ = srv.Serve(ln) }()
}

// link puts h behind the simulated link: the connection's set-up, the round
// trip, the request-rate limit (limited hosts only) and the bandwidth caps.
func (w *WAN) link(h http.Handler, limited bool) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.requests.Add(1)
		if obs := w.Config.Observe; obs != nil {
			sw := &statusWriter{ResponseWriter: rw}
			rw = sw
			start := w.clk.Now()
			defer func() { obs(r.Method, r.URL.Path, sw.status, start, w.clk.Now()) }()
		}
		w.down.meterEvent(w.clk.Now(), func(m *linkMeter) { m.requests++ })
		defer func() { w.down.meterEvent(w.clk.Now(), func(m *linkMeter) { m.requests-- }) }()
		ctx := r.Context()
		delay := w.Config.Latency
		if st, _ := ctx.Value(connKey{}).(*connState); st != nil && !st.setUp.Swap(true) {
			w.conns.Add(1)
			delay += w.Config.Handshake
		}
		if err := w.clk.Sleep(ctx, delay); err != nil {
			return
		}
		if limited {
			if ok, wait := w.reqs.allow(w.clk.Now()); !ok {
				w.throttled.Add(1)
				secs := max(1, int((wait+time.Second-1)/time.Second))
				rw.Header().Set("Retry-After", strconv.Itoa(secs))
				rw.Header().Set("Content-Type", "application/json")
				rw.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(rw, `{"errors":[{"code":"TOOMANYREQUESTS","message":"rate limit exceeded"}]}`)
				return
			}
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &pacedReader{r: r.Body, ctx: ctx, clk: w.clk, b: w.up, count: func(n int64) { w.bytesUp.Add(n) }}
		}
		pw := &pacedWriter{ResponseWriter: rw, ctx: ctx, clk: w.clk, b: w.down, count: func(n int64) { w.bytesDown.Add(n) }}
		pw.answer()
		defer pw.end()
		h.ServeHTTP(pw, r)
	})
}

// statusWriter remembers the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Stats returns what the simulator saw so far.
func (w *WAN) Stats() WANStats {
	s := WANStats{
		Requests: w.requests.Load(), Connections: w.conns.Load(), TokenRequests: w.tokens.Load(),
		Challenges: w.challenges.Load(), Throttled: w.throttled.Load(),
		BytesDown: w.bytesDown.Load(), BytesUp: w.bytesUp.Load(),
		Idle: w.down.idle(w.clk.Now()),
	}
	if w.cdn != nil {
		s.Redirects = w.cdn.Redirects()
		if w.cdn.store != nil {
			s.BlobFileBytes = w.cdn.store.bytes.Load()
		}
	}
	return s
}

// CDNHost is the blob host's "127.0.0.1:PORT" ("" without CDN).
func (w *WAN) CDNHost() string {
	if w.cdn == nil {
		return ""
	}
	return w.cdn.Host()
}

// WriteAuthFile writes a containers auth.json holding WANUser for the
// registry host into dir and returns its path.
func (w *WAN) WriteAuthFile(dir string) (string, error) {
	return writeAuthJSON(filepath.Join(dir, "wan-auth.json"), map[string]Credentials{w.Host: WANUser})
}

// Close stops both hosts and removes the token signer's folder.
func (w *WAN) Close() error {
	var errs []error
	for _, s := range w.servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = s.Close()
		}
		cancel()
	}
	if w.dir != "" {
		errs = append(errs, os.RemoveAll(w.dir))
	}
	return errors.Join(errs...)
}
