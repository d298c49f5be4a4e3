package registry

import (
	"net/http"
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
	if err := l.lim.Acquire(req.Context()); err != nil {
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
