package registry

import (
	"net/http"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/mirror/adaptive"
)

// DefaultMaxRequestsPerHost is Options.MaxRequestsPerHost's default: the
// ceiling of requests in flight to one registry host.
const DefaultMaxRequestsPerHost = 64

// requestStart is where a host's bound on requests in flight starts: what the
// client used as a fixed bound before it adapted (or the ceiling, when lower).
const requestStart = 16

func newRequestLimit(ceiling int) *adaptive.Limit {
	return adaptive.NewFrom(requestStart, ceiling)
}

// hostLimiter bounds the requests in flight to one host (adaptive.Limit): a
// slot is held until the response headers arrive. An answer 429 or 5xx cuts
// the bound, and so does one far slower to start than the host's best (a
// request without a body: the time to the headers is round trips and the
// host's queue, not an upload); requests answered well while others wait let
// it grow. Streaming uploads (a body without GetBody) are not limited here,
// so that an upload reading from another request never waits for a slot (no
// deadlock); the copy engine bounds those. A redirect (a blob read sent to a
// CDN host) is a second request under the same bound.
type hostLimiter struct {
	inner http.RoundTripper
	lim   *adaptive.Limit
}

func (l *hostLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return l.inner.RoundTrip(req)
	}
	acquire := l.lim.Acquire
	if carriesBlob(req) {
		acquire = l.lim.AcquireFirst
	}
	if err := acquire(req.Context()); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := l.inner.RoundTrip(req)
	ok := err == nil && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500
	if err == nil && !ok {
		l.lim.Trouble()
	}
	if ok && (req.Body == nil || req.Body == http.NoBody) {
		l.lim.Latency(time.Since(start))
	}
	l.lim.Release(ok)
	return resp, err
}

// carriesBlob tells the requests that fetch blob contents: a blob GET, and a
// redirect's next request (the CDN's answer to one). They take a free slot
// before manifest reads, tag lists and checks: bytes on the link first, and
// at the start of a run the first image's blob reads do not queue behind the
// manifest reads and signature lookups of the next images (over a WAN each
// of those first requests also waits for a new connection).
func carriesBlob(req *http.Request) bool {
	return req.Method == http.MethodGet && (req.Response != nil || strings.Contains(req.URL.Path, "/blobs/sha256:"))
}

// RequestLimits returns, by host, what the bounds on requests in flight did
// this run (for the debug log and tests).
func (r *Client) RequestLimits() map[string]adaptive.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]adaptive.Stats, len(r.limits))
	for h, l := range r.limits {
		out[h] = l.Stats()
	}
	return out
}
