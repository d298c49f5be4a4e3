package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Timeouts bound how long a registry may stay silent. Every request is watched:
// a request whose answer does not start in time, or whose body (the answer's,
// or an upload's) stops moving, fails as one attempt and is retried on a new
// connection. A host that says nothing at all for Stall while requests wait on
// it, one of them having timed out already, is reported stalled: its remaining
// work fails at once (endpoint.ErrRegistryUnreachable) instead of being retried
// request by request.
type Timeouts struct {
	// Header: the answer's status and headers must arrive within it once the
	// request is sent (default DefaultHeaderTimeout). The commit of a streamed
	// upload, which a registry may take long to verify and store, gets
	// CommitTimeout instead.
	Header time.Duration
	// Idle: a body that moves no byte for this long fails the attempt (default
	// DefaultIdleTimeout). Only time spent waiting on the registry counts: an
	// answer read slowly by its consumer, or an upload whose source is slow, is
	// not idle.
	Idle time.Duration
	// Stall: how long a host may answer nothing while requests wait on it,
	// after one of them timed out, before it is reported stalled (default
	// DefaultStallTimeout).
	Stall time.Duration
}

// Default timeouts: a stalled registry is reported within a minute.
const (
	DefaultHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout   = 30 * time.Second
	DefaultStallTimeout  = 45 * time.Second
	// CommitTimeout bounds the answer to the commit of a streamed upload.
	CommitTimeout = 10 * time.Minute
)

func (t Timeouts) withDefaults() Timeouts {
	if t.Header <= 0 {
		t.Header = DefaultHeaderTimeout
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdleTimeout
	}
	if t.Stall <= 0 {
		t.Stall = DefaultStallTimeout
	}
	return t
}

// TimeoutError is an attempt that timed out: Host did not answer (What) for
// After. It is a net.Error whose Timeout is true, so the retry policy retries it.
type TimeoutError struct {
	Host, What string
	After      time.Duration
	// Silent is true when the host answered nothing else while this request
	// waited (other requests made no progress either).
	Silent bool
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: %s for %s", e.Host, e.What, e.After)
}

// Timeout implements net.Error.
func (e *TimeoutError) Timeout() bool { return true }

// Temporary implements net.Error.
func (e *TimeoutError) Temporary() bool { return true }

// requestKind names a request's kind for the timeout streaks: its method and
// what its path asks for (oci.APIPathKind), e.g. "GET blob".
func requestKind(req *http.Request) string {
	return req.Method + " " + oci.APIPathKind(req.URL.Path)
}

func (h *hostState) timedOut(kind string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streak == nil {
		h.streak = map[string]int{}
	}
	h.streak[kind]++
	return h.streak[kind]
}

func (h *hostState) ended(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.streak, kind)
}

func (h *hostState) progress(now time.Time) { h.lastProgress.Store(now.UnixNano()) }

type longWaitKey struct{}

// withLongWait marks a request whose answer may take up to CommitTimeout.
func withLongWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, longWaitKey{}, true)
}

// watchTransport watches every request (see Timeouts).
type watchTransport struct {
	inner http.RoundTripper
	r     *Client
}

// Request phases.
const (
	phaseSending  = iota // the request body is being sent
	phaseAwaiting        // waiting for the answer's headers
	phaseReading         // the answer's body is being read
	phaseDone
)

type watch struct {
	r      *Client
	t      Timeouts
	host   string
	h      *hostState
	header time.Duration
	long   bool // a long wait (commit): it does not count against the host
	kind   string
	cancel context.CancelFunc
	tick   time.Duration

	mu     sync.Mutex
	phase  int
	inRead bool
	since  time.Time // start of the current wait on the host
	err    error     // why the request was stopped
	timer  *time.Timer
}

func (wt *watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := wt.r
	ctx, cancel := context.WithCancel(req.Context())
	w := &watch{r: r, t: r.timeouts, host: req.URL.Host, h: r.hostOf(req.URL.Host), header: r.timeouts.Header, cancel: cancel, kind: requestKind(req)}
	if req.Context().Value(longWaitKey{}) != nil {
		w.header, w.long = max(CommitTimeout, r.timeouts.Header), true
	}
	w.tick = min(max(min(w.t.Header, w.t.Idle)/20, 5*time.Millisecond), time.Second)
	req = req.WithContext(ctx)
	w.since = time.Now()
	w.phase = phaseAwaiting
	if req.Body != nil && req.Body != http.NoBody {
		w.phase = phaseSending
		req.Body = &watchedBody{ReadCloser: req.Body, w: w, request: true, left: req.ContentLength}
		if gb := req.GetBody; gb != nil {
			req.GetBody = func() (io.ReadCloser, error) {
				b, err := gb()
				if err != nil {
					return nil, err
				}
				return &watchedBody{ReadCloser: b, w: w, request: true, left: req.ContentLength}, nil
			}
		}
	}
	w.mu.Lock()
	w.timer = time.AfterFunc(w.tick, w.check)
	w.mu.Unlock()
	resp, err := wt.inner.RoundTrip(req)
	if err != nil {
		w.finish()
		cancel()
		if werr := w.stopped(); werr != nil {
			return nil, werr
		}
		return nil, err
	}
	now := time.Now()
	w.mu.Lock()
	w.phase, w.since = phaseReading, now
	w.mu.Unlock()
	// An answer is progress once its body moves, or at once when it has none.
	whole := resp.ContentLength == 0 || req.Method == http.MethodHead
	r.answered(w.h, now, resp, whole)
	if whole && resp.StatusCode < 500 {
		w.h.ended(w.kind)
	}
	resp.Body = &watchedBody{ReadCloser: resp.Body, w: w}
	return resp, nil
}

// answered records an answer's status in the host's health: 5xx answers in a
// row are what the circuit breaker counts (see NoteFailure).
func (r *Client) answered(h *hostState, now time.Time, resp *http.Response, progress bool) {
	if progress {
		h.progress(now)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if resp.StatusCode >= 500 {
		h.bad++
		h.lastBad = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	} else {
		h.bad = 0
	}
}

func (w *watch) stopped() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watch) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = phaseDone
	if w.timer != nil {
		w.timer.Stop()
	}
}

// check runs every tick while the request is in flight.
func (w *watch) check() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.phase == phaseDone || w.err != nil {
		return
	}
	var limit time.Duration
	var what string
	switch {
	case w.phase == phaseSending && !w.inRead:
		limit, what = w.t.Idle, "stopped taking the request body"
	case w.phase == phaseAwaiting:
		limit, what = w.header, "sent no answer"
	case w.phase == phaseReading && w.inRead:
		limit, what = w.t.Idle, "sent no data"
	}
	if err := w.r.hostDown(w.host); err != nil {
		w.stop(err)
		return
	}
	if limit > 0 && !w.long {
		if err := w.r.stalled(w.h, w.host, now); err != nil {
			w.stop(err)
			return
		}
	}
	if limit > 0 && now.Sub(w.since) >= limit {
		silent := time.Unix(0, w.h.lastProgress.Load()).Before(w.since)
		if silent && !w.long {
			w.h.mu.Lock()
			if !w.h.strikeAt.After(time.Unix(0, w.h.lastProgress.Load())) || now.Sub(w.h.strikeAt) > w.t.Stall {
				w.h.silentFrom = w.since
			}
			w.h.strikeAt = now
			w.h.mu.Unlock()
		}
		te := &TimeoutError{Host: w.host, What: what, After: limit, Silent: silent}
		if n := w.h.timedOut(w.kind); n >= breakerAnswers && !w.long {
			// Every request of this kind hangs (uploads, blob bodies), however
			// the host answers the others.
			w.stop(w.r.markDown(w.host, fmt.Sprintf("%s: %d %s requests in a row timed out", explainTimeout(te), n, w.kind)))
			return
		}
		w.stop(te)
		return
	}
	w.timer.Reset(w.tick)
}

func (w *watch) stop(err error) {
	w.err = err
	w.phase = phaseDone
	w.cancel()
}

// stalled returns the error that marks host stalled when it answered nothing
// for Stall, counted from the wait that ended in its latest run of silent
// timeouts (nil otherwise). The host is then down for the rest of the run.
func (r *Client) stalled(h *hostState, host string, now time.Time) error {
	last := time.Unix(0, h.lastProgress.Load())
	h.mu.Lock()
	struck := h.strikeAt.After(last) && now.Sub(h.strikeAt) <= r.timeouts.Stall
	from := h.silentFrom
	h.mu.Unlock()
	if !struck || now.Sub(from) < r.timeouts.Stall {
		return nil
	}
	return r.markDown(host, fmt.Sprintf("the registry stopped answering: nothing for %s (it accepts connections but sends no answer or no data); check the registry and any proxy in front of it", now.Sub(from).Round(time.Second)))
}

// markDown records host as unreachable for the rest of the run (the first
// reason stays) and returns the error its operations fail with.
func (r *Client) markDown(host, why string) error {
	down := fmt.Errorf("%w: %s: %s", endpoint.ErrRegistryUnreachable, host, why)
	hs := r.hostOf(host)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.down != nil {
		return hs.down
	}
	hs.down = down
	return down
}

// watchedBody is a request or answer body under a watch.
type watchedBody struct {
	io.ReadCloser
	w       *watch
	request bool
	left    int64 // request bytes still to send (ContentLength; <0 unknown)
}

func (b *watchedBody) Read(p []byte) (int, error) {
	w := b.w
	w.mu.Lock()
	if w.err != nil && !b.request {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	w.inRead = true
	if !b.request {
		w.since = time.Now()
	}
	w.mu.Unlock()
	n, err := b.ReadCloser.Read(p)
	now := time.Now()
	w.mu.Lock()
	w.inRead = false
	if b.request {
		// The transport asks for more: what it had was taken by the host.
		w.since = now
		if b.left > 0 {
			b.left -= int64(n)
		}
		if err == io.EOF || (b.left == 0 && n > 0) {
			if w.phase == phaseSending {
				w.phase = phaseAwaiting
			}
		}
	} else if n > 0 {
		w.h.progress(now)
		w.since = now
	}
	if !b.request && err == io.EOF {
		w.h.ended(w.kind)
	}
	if err != nil && err != io.EOF && w.err != nil && !b.request {
		err = w.err
	}
	w.mu.Unlock()
	return n, err
}

func (b *watchedBody) Close() error {
	if !b.request {
		b.w.finish()
		defer b.w.cancel()
	}
	return b.ReadCloser.Close()
}

// IsTimeout reports whether err is (or wraps) an attempt that timed out.
func IsTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te)
}
