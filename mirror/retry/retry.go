// Package retry is airlock's one retry policy: how many attempts an operation
// gets, the backoff between them (or the server's Retry-After), and which
// errors are worth another attempt, the registry's answers among them (the one
// typed registry error, endpoint.RegistryError, by status and error code).
// Every registry request and every blob transfer runs under it.
//
// It knows nothing about how registries are talked to, the copy engine or
// catalogs: it sees errors, durations and a context.
package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
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

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Policy is airlock's one retry policy. It is applied in exactly one layer:
// each registry operation (a manifest read, an existence check, a mount, a
// manifest push) retries itself, and a blob transfer (source read + destination
// write, verified end to end) is retried as one operation whose requests do not
// retry on their own. The HTTP transport never retries. So --retry-times N means at
// most N+1 attempts of any one request, catalog fetch included.
type Policy struct {
	// Times is how many times a failed attempt is retried (0: never).
	Times int
	// Base is the first delay (default 250ms); each retry doubles it, up to Max
	// (default 30s), with ±50% jitter. A Retry-After header overrides the delay
	// (capped by MaxRetryAfter, default 2m).
	Base, Max, MaxRetryAfter time.Duration
	// Delay, when positive, is --retry-delay (oc-mirror's meaning): a fixed
	// wait between attempts instead of the exponential backoff. A Retry-After
	// header still wins.
	Delay time.Duration
}

// DefaultTimes is --retry-times' default.
const DefaultTimes = 5

// Retries returns a policy of n retries with the default backoff.
func Retries(n int) *Policy { return &Policy{Times: max(n, 0)} }

// OrDefault returns *p with defaults filled in; nil means DefaultTimes.
func OrDefault(p *Policy) Policy {
	if p == nil {
		return Policy{Times: DefaultTimes}.withDefaults()
	}
	return p.withDefaults()
}

func (p Policy) withDefaults() Policy {
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
func (p Policy) delay(attempt int, retryAfter time.Duration, hasRetryAfter bool) time.Duration {
	if hasRetryAfter {
		return min(retryAfter, p.MaxRetryAfter)
	}
	if p.Delay > 0 {
		return p.Delay
	}
	d := p.Base
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	// ±50% jitter.
	return d/2 + time.Duration(rand.Int64N(int64(d)+1))
}

// Attempts counts the attempts of one operation. An operation in progress is
// carried in the context, so that the requests it makes know an outer loop
// retries them and make a single attempt each.
type Attempts struct {
	p   Policy
	n   int
	log *slog.Logger
}

type attemptsKey struct{}

// FromContext returns the operation in progress that ctx carries (see Do), or
// nil: a request made under it makes one attempt and lets the operation retry.
func FromContext(ctx context.Context) *Attempts {
	a, _ := ctx.Value(attemptsKey{}).(*Attempts)
	return a
}

// NewAttempts starts counting the attempts of one operation under p, logging
// retries to log (nil: no logging).
func NewAttempts(p Policy, log *slog.Logger) *Attempts { return &Attempts{p: p, log: log} }

// Again records a failed attempt and reports whether another one should follow,
// after waiting the backoff (or the server's Retry-After).
func (a *Attempts) Again(ctx context.Context, err error, what string) bool {
	a.n++
	if err == nil || ctx.Err() != nil || a.n > a.p.Times || !isRetryable(err) {
		return false
	}
	var wait time.Duration
	var hasRA bool
	if re, ok := endpoint.AsRegistryError(err); ok {
		wait, hasRA = re.RetryAfter, re.HasRetryAfter
	}
	d := a.p.delay(a.n, wait, hasRA)
	if a.log != nil {
		a.log.Debug("retrying", "what", what, "attempt", a.n+1, "of", a.p.Times+1, "wait", d, "error", err)
	}
	return sleepCtx(ctx, d) == nil
}

// Do runs f as one operation under the policy: up to Times+1 attempts. When ctx
// already carries an operation (f is part of a bigger one, such as a blob
// transfer), f runs once and the outer operation decides.
func (p Policy) Do(ctx context.Context, log *slog.Logger, what string, f func(ctx context.Context) error) error {
	if FromContext(ctx) != nil {
		return f(ctx)
	}
	a := &Attempts{p: p, log: log}
	octx := context.WithValue(ctx, attemptsKey{}, a)
	for {
		err := f(octx)
		if !a.Again(ctx, err, what) {
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

// RetryableStatus reports whether an answer with this HTTP status is worth
// another attempt: 408, 429, 499, 522 and 5xx other than 501 and 505.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, 499, 522:
		return true
	}
	return code >= 500 && code != http.StatusNotImplemented && code != http.StatusHTTPVersionNotSupported
}

// isRetryable reports whether err is worth another attempt: 408, 429, 5xx, a
// 401 for an expired token (endpoint.RegistryError.ExpiredToken),
// content that failed verification (in either direction: a body altered or cut
// in transit), a registry refusing verified content as invalid (see
// contentRejected), EOFs, connection
// resets and refusals, and network timeouts. Cancellation, other 4xx answers,
// unknown hosts, certificate errors and an unreachable registry are not.
func isRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, endpoint.ErrRegistryUnreachable) {
		return false
	}
	var pe permanentError
	if errors.As(err, &pe) {
		return false
	}
	if errors.Is(err, oci.ErrDigestMismatch) || errors.Is(err, ErrShortBody) || errors.Is(err, ErrContentRejected) ||
		errors.Is(err, ErrUploadGone) {
		return true
	}
	if re, ok := endpoint.AsRegistryError(err); ok {
		if re.StatusCode == http.StatusBadRequest && re.Has(contentRejected...) {
			return true
		}
		if re.StatusCode == http.StatusUnauthorized && re.ExpiredToken {
			return true
		}
		return RetryableStatus(re.StatusCode)
	}
	if IsPermanentNetError(err) {
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

// ErrShortBody marks a blob body that ended before its declared size.
var ErrShortBody = errors.New("blob body ended early")

// ErrUploadGone is a kept upload session the registry no longer knows (it
// expired, or the failed commit did end it): another attempt opens a new one.
var ErrUploadGone = errors.New("the upload session is gone")

// ErrContentRejected marks a registry refusing (400) content airlock verified
// before sending it: what arrived was altered or cut on the way.
var ErrContentRejected = errors.New("the registry refused content that was verified before it was sent")

// contentRejected are the error codes of a registry refusing (400) content
// airlock verified before sending: the bytes were altered or cut on the way,
// and sending them again is the fix.
var contentRejected = []endpoint.ErrorCode{endpoint.CodeDigestInvalid, endpoint.CodeSizeInvalid, endpoint.CodeBlobUploadInvalid, endpoint.CodeManifestInvalid, endpoint.CodeManifestBlobUnknown}

// Permanent marks err as one no retry can fix: Do returns it at once.
func Permanent(err error) error { return permanentError{err} }

type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// IsPermanentNetError reports errors another attempt cannot fix: an unknown host,
// and TLS failures (an untrusted certificate, a plain-HTTP server).
func IsPermanentNetError(err error) bool {
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

// ParseRetryAfter reads a Retry-After header (seconds, or an HTTP date): the
// wait it asks for, and whether it asks for one ("" does not).
func ParseRetryAfter(h string) (time.Duration, bool) {
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

// Transient reports whether err is a failure that running the same command
// again may get past: one worth another attempt (see Do: 408, 429, 5xx, resets,
// network timeouts, content altered in transit) or a deadline that ran out.
// Cancellation is not: the run was stopped.
func Transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return isRetryable(err)
}
