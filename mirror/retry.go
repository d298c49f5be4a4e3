package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// RetryPolicy is the backoff used for registry requests and blob transfers.
type RetryPolicy struct {
	// Times is how many times a failed attempt is retried (0: never).
	Times int
	// Base is the first delay (default 250ms); each retry doubles it, up to Max
	// (default 30s), with ±50% jitter. A Retry-After header overrides the delay
	// (capped by MaxRetryAfter, default 2m).
	Base, Max, MaxRetryAfter time.Duration
}

// defaultRetryTimes is --retry-times' default.
const defaultRetryTimes = 5

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Times < 0 {
		p.Times = 0
	}
	if p.Base <= 0 {
		p.Base = 250 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 2 * time.Minute
	}
	return p
}

// delay returns the wait before retry number attempt (1-based).
func (p RetryPolicy) delay(attempt int, retryAfter time.Duration, hasRetryAfter bool) time.Duration {
	if hasRetryAfter {
		return min(retryAfter, p.MaxRetryAfter)
	}
	d := p.Base
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	// ±50% jitter.
	return d/2 + time.Duration(rand.Int64N(int64(d)+1))
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// HTTPStatusError is returned for unexpected registry answers.
type HTTPStatusError struct {
	Method, URL string
	StatusCode  int
	Body        string // first bytes of the answer (registry error JSON)
	retryAfter  time.Duration
	hasRetry    bool
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, 499, 522:
		return true
	}
	return code >= 500 && code != http.StatusNotImplemented && code != http.StatusHTTPVersionNotSupported
}

// isRetryable reports whether err is worth another attempt: 429, 5xx, EOFs,
// connection resets and network timeouts. Context cancellation, digest
// mismatches and 4xx answers are not.
func isRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var rf *refetchError
	if errors.As(err, &rf) {
		return true
	}
	if errors.Is(err, ErrDigestMismatch) {
		return false
	}
	var se *HTTPStatusError
	if errors.As(err, &se) {
		return retryableStatus(se.StatusCode)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, errShortBody) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

func parseRetryAfter(h string) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// retryTransport retries replayable requests (no body, or a body with GetBody) on
// retryable network errors and status codes, honouring Retry-After.
type retryTransport struct {
	inner   http.RoundTripper
	policy  RetryPolicy
	onRetry func(req *http.Request, attempt int, reason string)
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		resp, err := t.inner.RoundTrip(r)
		if !replayable || attempt >= t.policy.Times {
			return resp, err
		}
		var wait time.Duration
		var hasRA bool
		reason := ""
		switch {
		case err != nil:
			if !isRetryable(err) {
				return nil, err
			}
			reason = err.Error()
		case retryableStatus(resp.StatusCode):
			wait, hasRA = parseRetryAfter(resp.Header.Get("Retry-After"))
			reason = resp.Status
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		default:
			return resp, nil
		}
		if t.onRetry != nil {
			t.onRetry(req, attempt+1, reason)
		}
		if err := sleepCtx(req.Context(), t.policy.delay(attempt+1, wait, hasRA)); err != nil {
			return nil, err
		}
	}
}

// refetchError marks a mismatch worth fetching again (a manifest whose body was
// cut short in transit); it still matches ErrDigestMismatch with errors.Is.
type refetchError struct{ err error }

func (e *refetchError) Error() string { return e.err.Error() }
func (e *refetchError) Unwrap() error { return e.err }
