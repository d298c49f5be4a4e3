package registry

import (
	"net/http"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/mirror/adaptive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// DefaultMaxPerHost is Options.MaxPerHost's default: the ceiling of a host's
// bound on the work touching it, unless the copy engine raises it.
const DefaultMaxPerHost = 64

// hostStart is where a host's bound starts: what the client used as a fixed
// bound on requests in flight before it adapted (or the ceiling, when lower).
const hostStart = 16

func newHostLimit(ceiling int) *adaptive.Limit {
	return adaptive.NewFrom(hostStart, ceiling)
}

var _ endpoint.HostLimiter = (*Client)(nil)

// HostLimit implements endpoint.HostLimiter: host's one adaptive bound on the
// work touching it. The client counts each request under it until the
// answer's headers arrive (hostLimiter); the copy engine counts each blob
// transfer under it for its whole length, and the requests of a transfer
// (marked endpoint.InSlot) take no slot of their own.
//
// So a host has one bound, which both see grow and shrink, where it had two
// stacked (requests in flight here, blob transfers in the engine): the
// engine's bound cut on a 429 its requests met while the client's was cut
// too, each learnt the host's latency from the same answers, and the engine
// found the host of a failure by parsing a URL out of the error. The client
// keeps it because the client is what talks to the host, from the first
// catalog read to the last tag, across the stages and the copy engines of a
// run; the engine only borrows it while it copies.
func (r *Client) HostLimit(host string) endpoint.HostLimit {
	return r.hostOf(host).limit
}

// hostLimiter bounds the requests in flight to one host (the host's
// adaptive.Limit): a slot is held until the response headers arrive. An
// answer 429 or 5xx cuts the bound, and so does one far slower to start than
// the host's best (a request without a body: the time to the headers is round
// trips and the host's queue, not an upload); requests answered well while
// others wait let it grow. A request of an operation that holds its slots
// (endpoint.InSlot: a blob transfer of the copy engine) takes none, but its
// answer counts the same. Nor do streaming uploads (a body without GetBody),
// so that an upload reading from another request never waits for a slot (no
// deadlock); outside a transfer nothing bounds them. A redirect
// (a blob read sent to a CDN host) is a second request under the same bound.
type hostLimiter struct {
	inner http.RoundTripper
	lim   *adaptive.Limit
}

func (l *hostLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	streaming := req.Body != nil && req.Body != http.NoBody && req.GetBody == nil
	inSlot := streaming || endpoint.HasSlot(req.Context())
	if !inSlot {
		acquire := l.lim.Acquire
		if carriesBlob(req) {
			acquire = l.lim.AcquireFirst
		}
		if err := acquire(req.Context()); err != nil {
			return nil, err
		}
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
	if !inSlot {
		l.lim.Release(ok)
	}
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

// LimitStats returns, by host, what the hosts' bounds did this run (for the
// debug log and tests): the hosts whose bound was ever taken.
func (r *Client) LimitStats() map[string]adaptive.Stats {
	out := map[string]adaptive.Stats{}
	r.eachHost(func(hs *hostState) {
		if st := hs.limit.Stats(); st.Peak > 0 {
			out[hs.name] = st
		}
	})
	return out
}
