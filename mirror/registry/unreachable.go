package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// ErrAuth is returned (wrapped) by Probe when a registry refuses the
// credentials (or asks for some and none are configured).
var ErrAuth = errors.New("registry refused the credentials")

// op runs one registry operation on repo under the retry policy. An operation
// that ends failing to connect marks the host unreachable (see
// endpoint.ErrRegistryUnreachable).
func (r *Client) op(ctx context.Context, repo, what string, f func(ctx context.Context) error) error {
	host := endpoint.RepoHost(repo)
	if err := r.hostDown(host); err != nil {
		return err
	}
	nested := retry.FromContext(ctx) != nil
	err := r.policy.Do(ctx, r.log, what, func(ctx context.Context) error {
		// A host found stalled or failing meanwhile is not asked again.
		if err := r.hostDown(host); err != nil {
			return err
		}
		return f(ctx)
	})
	if err != nil && !nested {
		return r.NoteFailure(ctx, repo, err)
	}
	return err
}

// NoteFailure is told the final error of an operation on repo (the copy engine
// calls it after a blob transfer failed for good). When the error is a failure to
// connect, the host is marked unreachable and the returned error says so with
// the fix; otherwise err is returned unchanged.
//
// It is also the circuit breaker: a final error that is a timeout during which
// the host answered nothing, or a 5xx answer ending a run of them (see
// breakerAnswers), marks the host down too, so that its remaining work fails at
// once with one message instead of being retried image by image.
func (r *Client) NoteFailure(ctx context.Context, repo string, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, endpoint.ErrRegistryUnreachable) {
		return err
	}
	host := endpoint.RepoHost(repo)
	var te *TimeoutError
	if errors.As(err, &te) && strings.EqualFold(te.Host, host) && te.Silent {
		return r.markDown(host, explainTimeout(te))
	}
	if down := r.breaker(host, err); down != nil {
		return down
	}
	if !connectFailure(err) {
		return err
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	if u, perr := url.Parse(ue.URL); perr != nil || !strings.EqualFold(u.Host, host) {
		return err // another host failed (the other side of a transfer, a token server)
	}
	return r.markDown(host, explainConnect(err, host, r.tlsHint()))
}

// breakerAnswers is how many 5xx answers in a row (and nothing else from the
// host in between) make a failed operation stop every other one on that host.
const breakerAnswers = 3

// breaker returns the error marking host down when err is a 5xx answer of host
// ending at least breakerAnswers of them in a row; nil otherwise.
func (r *Client) breaker(host string, err error) error {
	re, ok := endpoint.AsRegistryError(err)
	if !ok || re.StatusCode < 500 || !strings.EqualFold(re.Host, host) {
		return nil
	}
	h := r.hostOf(host)
	h.mu.Lock()
	bad, last := h.bad, h.lastBad
	h.mu.Unlock()
	if bad < breakerAnswers {
		return nil
	}
	return r.markDown(host, fmt.Sprintf("the registry answered the last %d requests with a server error (last: %s): stopping rather than trying image by image; check the registry and any proxy in front of it, then run the same command again", bad, last))
}

// explainTimeout describes a host that stopped answering.
func explainTimeout(te *TimeoutError) string {
	return fmt.Sprintf("the registry stopped answering: it %s for %s (it accepts connections but does not answer); check the registry and any proxy in front of it", te.What, te.After)
}

func (r *Client) tlsHint() string {
	if r.opts.TLSFlag != "" {
		return r.opts.TLSFlag
	}
	return "--src-tls-verify=false or --dest-tls-verify=false"
}

// connectFailure reports errors that mean the registry cannot be reached at all
// (as opposed to a flaky answer): refused or unroutable connections, unknown
// hosts, TLS failures, dial timeouts.
func connectFailure(err error) bool {
	// A registry that answered (even with an error status) was reached; for a
	// loopback registry the ping tries HTTPS and HTTP together, and the HTTPS
	// attempt's TLS error must not hide the HTTP attempt's answer.
	// (A 400 to the HTTP half is an HTTPS-only registry: the TLS error counts.)
	if re, ok := endpoint.AsRegistryError(err); ok && (re.Cause == nil || re.StatusCode != http.StatusBadRequest) {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	if retry.IsPermanentNetError(err) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	var tv *tls.CertificateVerificationError
	return errors.As(err, &tv)
}

// explainConnect turns a connection failure into one sentence naming the cause
// and the fix.
func explainConnect(err error, host, tlsFlag string) string {
	var dns *net.DNSError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var rh tls.RecordHeaderError
	var oe *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("connection refused: is a registry listening on %s?", host)
	case errors.As(err, &dns):
		return fmt.Sprintf("cannot resolve %q: check the registry name (and the DNS or /etc/hosts of this machine)", dns.Name)
	case errors.As(err, &rh) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("the registry speaks plain HTTP, not HTTPS: use %s for a registry without TLS", tlsFlag)
	case errors.As(err, &ua), errors.As(err, &hn):
		return fmt.Sprintf("x509: %v: add its CA to the system trust store, or use %s to skip verification", err, tlsFlag)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("no route to %s: check the network between this machine and the registry", host)
	case errors.As(err, &oe) && oe.Timeout():
		return fmt.Sprintf("no answer from %s in time: is the registry up, and is a firewall dropping the connection?", host)
	}
	return err.Error()
}

// explainStatus describes a failed /v2/ probe answer.
func explainStatus(code int, host string) string {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Sprintf("%d %s: the registry refused the credentials: log in (podman login %s) or pass --authfile with credentials for it", code, http.StatusText(code), host)
	case http.StatusNotFound:
		return fmt.Sprintf("404 on /v2/: %s does not serve the registry API at this address", host)
	}
	if code >= 500 {
		return fmt.Sprintf("%d %s to every attempt: the registry, or a proxy in front of it, is failing; check it, then run the same command again", code, http.StatusText(code))
	}
	return fmt.Sprintf("%d %s", code, http.StatusText(code))
}

// Probe checks, once, that the registry holding repo answers the registry API and
// accepts the configured credentials (ping, then the token exchange, then an
// authenticated GET /v2/), with push access when push is set. On a registry
// that authenticates with tokens the token exchange is that check (the token
// service refuses wrong credentials) and the GET is not sent: one round trip
// less before a run's first read. It retries only
// what a retry can fix (5xx, 429, resets); a refused connection, an unknown host,
// a TLS mismatch or refused credentials fail at once with an error that names the
// registry, the cause and the fix.
//
// A host probed successfully is not probed again by the same Client.
//
// With registries.conf (Options.Sources), a source repository is probed at its
// mirrors and its location, and one that answers is enough.
func (r *Client) Probe(ctx context.Context, repo string, push bool) error {
	if r.opts.Sources != nil && len(r.opts.Sources.entries) > 0 && !push {
		return r.probeSources(ctx, repo)
	}
	return r.probeOnce(ctx, repo, push)
}

func (r *Client) probeOnce(ctx context.Context, repo string, push bool) error {
	host := endpoint.RepoHost(repo)
	if err := r.hostDown(host); err != nil {
		return err
	}
	way := 0 // pull
	if push {
		way = 1
	}
	hs := r.hostOf(host)
	hs.mu.Lock()
	done := hs.probed[way]
	hs.mu.Unlock()
	if done {
		return nil
	}
	err := r.probe(ctx, repo, push)
	if err == nil {
		hs.mu.Lock()
		hs.probed[way] = true
		hs.mu.Unlock()
	}
	return err
}

func (r *Client) probe(ctx context.Context, repo string, push bool) error {
	host := endpoint.RepoHost(repo)
	err := r.policy.Do(ctx, r.log, "probe "+host, func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, push)
		if err != nil {
			if connectFailure(err) || IsTimeout(err) {
				return retry.Permanent(err) // another attempt would only delay the answer
			}
			return err
		}
		root := base[:strings.Index(base, "/v2/")+len("/v2/")]
		if u, err := url.Parse(root); err == nil && r.pings.tokenAuth(u.Host) {
			return nil
		}
		resp, err := r.do(context.WithValue(ctx, unmemoizedKey{}, true), c, http.MethodGet, root, nil, nil)
		if err != nil {
			if connectFailure(err) || IsTimeout(err) {
				return retry.Permanent(err)
			}
			return err
		}
		defer drain(resp)
		if resp.StatusCode != http.StatusOK {
			return statusError(resp)
		}
		// The answer is read whole: a registry whose answers stop after
		// their headers is found here, before the run's first read.
		if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)); err != nil {
			if IsTimeout(err) {
				return retry.Permanent(err)
			}
			return err
		}
		return nil
	})
	if err == nil {
		return nil
	}
	re, answered := endpoint.AsRegistryError(err)
	var to *TimeoutError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The probe's deadline (the run's preflight bound) ended the wait.
		return r.markDown(host, "the registry stopped answering: no answer to the registry API check in time (it accepts connections but does not answer); check the registry and any proxy in front of it")
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrAuthConfig):
		return err // the local credentials configuration, not the registry
	case errors.Is(err, endpoint.ErrRegistryUnreachable):
		return err
	case errors.As(err, &to):
		// Before the TLS cases: a plain-HTTP registry pinged over HTTPS too
		// adds a TLS error to the stalled HTTP attempt's.
		return r.markDown(host, explainTimeout(to))
	case answered && (re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden):
		return fmt.Errorf("%w: %s: %s", ErrAuth, host, r.credentialsHint(re.StatusCode, host, repo))
	case answered && (re.Cause == nil || re.StatusCode >= 500):
		// An answer to the probe's GET, or the ping's (whose error also
		// carries the HTTPS attempt's).
		return fmt.Errorf("%w: %s: %s", endpoint.ErrRegistryUnreachable, host, explainStatus(re.StatusCode, host))
	case connectFailure(err):
		return r.NoteFailure(ctx, repo, err)
	}
	return fmt.Errorf("%w: %s: %v", endpoint.ErrRegistryUnreachable, host, err)
}
