package mirror

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// RetryPolicy is airlock's one retry policy. It is applied in exactly one layer:
// each registry operation (a manifest read, an existence check, a mount, a
// manifest push) retries itself, and a blob transfer (source read + destination
// write, verified end to end) is retried as one operation whose requests do not
// retry on their own. The HTTP transport never retries. So --retry-times N means at
// most N+1 attempts of any one request, catalog fetch included.
type RetryPolicy struct {
	// Times is how many times a failed attempt is retried (0: never).
	Times int
	// Base is the first delay (default 250ms); each retry doubles it, up to Max
	// (default 30s), with ±50% jitter. A Retry-After header overrides the delay
	// (capped by MaxRetryAfter, default 2m).
	Base, Max, MaxRetryAfter time.Duration
}

// DefaultRetryTimes is --retry-times' default.
const DefaultRetryTimes = 5

// Retries returns a policy of n retries with the default backoff.
func Retries(n int) *RetryPolicy { return &RetryPolicy{Times: max(n, 0)} }

// policyOrDefault returns *p with defaults filled in; nil means DefaultRetryTimes.
func policyOrDefault(p *RetryPolicy) RetryPolicy {
	if p == nil {
		return RetryPolicy{Times: DefaultRetryTimes}.withDefaults()
	}
	return p.withDefaults()
}

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

// attempts counts the attempts of one operation. An operation in progress is
// carried in the context, so that the requests it makes know an outer loop
// retries them and make a single attempt each.
type attempts struct {
	p   RetryPolicy
	n   int
	log *slog.Logger
}

type attemptsKey struct{}

func attemptsFrom(ctx context.Context) *attempts {
	a, _ := ctx.Value(attemptsKey{}).(*attempts)
	return a
}

// again records a failed attempt and reports whether another one should follow,
// after waiting the backoff (or the server's Retry-After).
func (a *attempts) again(ctx context.Context, err error, what string) bool {
	a.n++
	if err == nil || ctx.Err() != nil || a.n > a.p.Times || !isRetryable(err) {
		return false
	}
	var wait time.Duration
	var hasRA bool
	var se *HTTPStatusError
	if errors.As(err, &se) {
		wait, hasRA = se.retryAfter, se.hasRetry
	}
	d := a.p.delay(a.n, wait, hasRA)
	if a.log != nil {
		a.log.Debug("retrying", "what", what, "attempt", a.n+1, "of", a.p.Times+1, "wait", d, "error", err)
	}
	return sleepCtx(ctx, d) == nil
}

// do runs f as one operation under the policy: up to Times+1 attempts. When ctx
// already carries an operation (f is part of a bigger one, such as a blob
// transfer), f runs once and the outer operation decides.
func (p RetryPolicy) do(ctx context.Context, log *slog.Logger, what string, f func(ctx context.Context) error) error {
	if attemptsFrom(ctx) != nil {
		return f(ctx)
	}
	a := &attempts{p: p, log: log}
	octx := context.WithValue(ctx, attemptsKey{}, a)
	for {
		err := f(octx)
		if !a.again(ctx, err, what) {
			return err
		}
	}
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

// isRetryable reports whether err is worth another attempt: 408, 429, 5xx,
// content that failed verification (in either direction: a body altered or cut
// in transit), a registry refusing verified content as invalid (see
// contentRejected), EOFs, connection
// resets and refusals, and network timeouts. Cancellation, other 4xx answers,
// unknown hosts, certificate errors and an unreachable registry are not.
func isRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrRegistryUnreachable) {
		return false
	}
	var pe permanent
	if errors.As(err, &pe) {
		return false
	}
	if errors.Is(err, ErrDigestMismatch) || errors.Is(err, errShortBody) || errors.Is(err, errContentRejected) ||
		errors.Is(err, errUploadGone) {
		return true
	}
	var se *HTTPStatusError
	if errors.As(err, &se) {
		if se.StatusCode == http.StatusBadRequest && contentRejected(se.Body) {
			return true
		}
		return retryableStatus(se.StatusCode)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		return retryableStatus(te.StatusCode)
	}
	if permanentNetError(err) {
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	// Any other failure of the HTTP exchange itself (for example "server closed
	// idle connection" when a kept-alive connection was dropped under a request).
	var ue *url.Error
	return errors.As(err, &ue)
}

// errContentRejected marks a registry refusing (400) content airlock verified
// before sending it: what arrived was altered or cut on the way.
var errContentRejected = errors.New("the registry refused content that was verified before it was sent")

// contentRejected reports a registry error body refusing content airlock
// verified before sending: the bytes were altered or cut on the way, and sending
// them again is the fix.
func contentRejected(body string) bool {
	for _, code := range []string{"DIGEST_INVALID", "SIZE_INVALID", "BLOB_UPLOAD_INVALID", "MANIFEST_INVALID", "MANIFEST_BLOB_UNKNOWN"} {
		if strings.Contains(body, code) {
			return true
		}
	}
	return false
}

// permanentNetError reports errors another attempt cannot fix: an unknown host,
// and TLS failures (an untrusted certificate, a plain-HTTP server).
func permanentNetError(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return true
	}
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &rh) || errors.As(err, &cv) ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
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
