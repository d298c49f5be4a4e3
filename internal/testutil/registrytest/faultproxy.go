package registrytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
)

// Fault is what the proxy does to one request.
type Fault int

const (
	// Pass forwards the request unchanged.
	Pass Fault = iota
	// TooManyRequests answers 429 with a Retry-After header (FaultPlan.RetryAfter).
	TooManyRequests
	// Unavailable answers 503.
	Unavailable
	// CutMidBody forwards the status and headers, sends half of the body, then
	// drops the connection.
	CutMidBody
	// TruncateBody answers with the first half of the body and a Content-Length
	// that matches it (a clean but short response).
	TruncateBody
	// FlipByte answers with the full body with one byte changed.
	FlipByte
	// MangleJSON re-indents a JSON body: still valid JSON, the same meaning,
	// other bytes (so another digest); a body that is not JSON is cut short.
	MangleJSON
	// Stall reads the request and never answers (a registry that accepts
	// connections and hangs), until the client gives up or the proxy stops.
	Stall
	// StallBody forwards the request, sends the answer's status and headers,
	// then hangs without sending a byte of its body (HEAD requests pass).
	StallBody
)

// The body faults (CutMidBody, TruncateBody, FlipByte, MangleJSON) apply to the request body
// when the request carries one (an upload, a manifest push): the proxy forwards
// half of it and drops the connection, forwards half of it as if it were whole,
// or forwards it with one byte changed. Otherwise they apply to the answer.

func (f Fault) String() string {
	return [...]string{"pass", "429", "503", "cut", "truncate", "flip", "mangle", "stall", "stall-body"}[f]
}

// ManifestUploads matches manifest pushes (PUT /v2/<name>/manifests/<ref>), by
// digest and by tag: FaultPlan.Match for faults on what a client uploads.
func ManifestUploads(r *http.Request) bool {
	return r.Method == http.MethodPut && PathKind(r.URL.Path) == "manifest"
}

// Everything matches every request: FaultPlan.Match for a registry that fails
// (or stalls) whatever is asked.
func Everything(*http.Request) bool { return true }

// FaultPlan says which requests the proxy breaks and how.
type FaultPlan struct {
	// Match selects the requests faults apply to; nil means blob GETs
	// (/v2/<name>/blobs/<digest>).
	Match func(*http.Request) bool
	// Sequence gives the faults of the first len(Sequence) matching requests, in
	// order; Pass entries let a request through.
	Sequence []Fault
	// After the sequence, each matching request gets a fault with probability
	// Rate, chosen uniformly from Kinds, using a generator seeded with Seed.
	Rate  float64
	Kinds []Fault
	Seed  uint64
	// RetryAfter is the Retry-After value of 429 answers (default "0").
	RetryAfter string
}

// Proxy is a fault-injecting reverse proxy in front of a registry.
type Proxy struct {
	srv    *httptest.Server
	target *url.URL
	plan   FaultPlan
	client *http.Client

	quit chan struct{} // closed when the proxy stops: stalled requests return

	mu      sync.Mutex
	n       int
	total   int
	rng     *rand.Rand
	applied map[Fault]int
	// injected counts the faults that changed what the client or the
	// registry received (see Injected).
	injected map[Fault]int
}

// NewFaultProxy starts a proxy on 127.0.0.1 forwarding to target ("host:port" of
// a plain-HTTP registry); it is stopped with t.Cleanup.
func NewFaultProxy(t testing.TB, target string, plan FaultPlan) *Proxy {
	t.Helper()
	u, err := url.Parse("http://" + target)
	if err != nil {
		t.Fatalf("registrytest: bad proxy target %q: %v", target, err)
	}
	if plan.Match == nil {
		plan.Match = func(r *http.Request) bool {
			return r.Method == http.MethodGet && PathKind(r.URL.Path) == "blob"
		}
	}
	if plan.RetryAfter == "" {
		plan.RetryAfter = "0"
	}
	p := &Proxy{
		target:   u,
		plan:     plan,
		client:   &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		rng:      rand.New(rand.NewPCG(plan.Seed, plan.Seed^0x9e3779b97f4a7c15)),
		applied:  map[Fault]int{},
		injected: map[Fault]int{},
		quit:     make(chan struct{}),
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() { close(p.quit); p.srv.CloseClientConnections(); p.srv.Close() })
	return p
}

// Host returns the proxy's "127.0.0.1:PORT".
func (p *Proxy) Host() string { u, _ := url.Parse(p.srv.URL); return u.Host }

// SetRate changes the probability of a fault for the requests that follow (for
// example 0 while a test seeds the registry through the proxy).
func (p *Proxy) SetRate(rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan.Rate = rate
}

// Requests returns how many requests the proxy received.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// Applied returns how many times each fault was drawn for a request, including
// those that could not alter it (a flipped byte of an empty answer, a cut HEAD).
func (p *Proxy) Applied() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.applied)
}

// Injected returns how many times each fault changed what the client or the
// registry received: an answer replaced (429, 503), a request or answer body
// cut, shortened or altered, a connection dropped or left hanging. A test that
// means to exercise faults checks this, not Applied.
func (p *Proxy) Injected() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.injected)
}

// hit records that fault f changed an exchange.
func (p *Proxy) hit(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.injected[f]++
}

func (p *Proxy) next(r *http.Request) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	if !p.plan.Match(r) {
		return Pass
	}
	f := Pass
	if p.n < len(p.plan.Sequence) {
		f = p.plan.Sequence[p.n]
	} else if len(p.plan.Kinds) > 0 && p.rng.Float64() < p.plan.Rate {
		f = p.plan.Kinds[p.rng.IntN(len(p.plan.Kinds))]
	}
	p.n++
	if f != Pass {
		p.applied[f]++
	}
	return f
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	fault := p.next(r)
	switch fault {
	case TooManyRequests, Unavailable, Stall:
		p.hit(fault)
	}
	switch fault {
	case TooManyRequests:
		w.Header().Set("Retry-After", p.plan.RetryAfter)
		http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, http.StatusTooManyRequests)
		return
	case Unavailable:
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	case Stall:
		io.Copy(io.Discard, r.Body)
		p.hang(r)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	if hasBody(r) && (fault == CutMidBody || fault == TruncateBody || fault == FlipByte || fault == MangleJSON) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		if fault == CutMidBody {
			p.hit(fault)
			panic(http.ErrAbortHandler) // the registry never sees the request
		}
		if d := damage(fault, body); !bytes.Equal(d, body) {
			p.hit(fault)
			body = d
		}
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		out.Header.Set("Content-Length", strconv.Itoa(len(body)))
		out.TransferEncoding = nil
		fault = Pass // the answer goes back untouched
	}
	out.URL.Scheme = p.target.Scheme
	out.URL.Host = p.target.Host
	out.Host = p.target.Host
	if r.ContentLength == 0 && fault == Pass && !hasBody(r) {
		out.Body = nil
	}
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, fmt.Sprintf("proxy: %v", err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		// Keep clients talking to the proxy.
		if lu, err := url.Parse(loc); err == nil && lu.Host == p.target.Host {
			lu.Host = p.Host()
			w.Header().Set("Location", lu.String())
		}
	}
	if fault == Pass || r.Method == http.MethodHead {
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	switch fault {
	case CutMidBody, StallBody:
		if len(body) > 0 {
			p.hit(fault)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(resp.StatusCode)
		if fault == CutMidBody {
			w.Write(body[:len(body)/2])
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if fault == StallBody {
			p.hang(r)
		}
		panic(http.ErrAbortHandler) // drops the connection
	}
	if d := damage(fault, body); !bytes.Equal(d, body) {
		p.hit(fault)
		body = d
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// hang waits until the client gives up on r or the proxy stops.
func (p *Proxy) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-p.quit:
	}
}

// hasBody reports whether r carries a request body.
func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

// damage returns body cut to its first half (TruncateBody), with its middle
// byte flipped (FlipByte) or re-indented (MangleJSON).
func damage(f Fault, body []byte) []byte {
	switch f {
	case MangleJSON:
		var b bytes.Buffer
		if json.Indent(&b, body, "", "   ") == nil && !bytes.Equal(b.Bytes(), body) {
			return b.Bytes()
		}
		return body[:len(body)/2]
	case TruncateBody:
		return body[:len(body)/2]
	case FlipByte:
		body = bytes.Clone(body)
		if len(body) > 0 {
			body[len(body)/2] ^= 0xff
		}
	}
	return body
}
