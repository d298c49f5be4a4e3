package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// RegistryOptions configures a registry endpoint. The zero value is secure: TLS
// verified, credentials from the default lookup, 5 retries.
type RegistryOptions struct {
	// AuthFile is --authfile; empty means the default lookup (see AuthKeychain).
	AuthFile string
	// Keychain overrides the auth file lookup when set.
	Keychain authn.Keychain
	// SkipTLSVerify is --src-tls-verify=false / --dest-tls-verify=false: do not
	// verify certificates, and allow plain HTTP. Plain HTTP is otherwise allowed
	// only for localhost and loopback addresses.
	SkipTLSVerify bool
	// RootCAs, when set, replaces the system trust store.
	RootCAs *x509.CertPool
	// RetryTimes is --retry-times: retries of a failed request (0 means the default
	// 5, negative means none). Retry holds the other backoff parameters.
	RetryTimes int
	Retry      RetryPolicy
	// MaxRequestsPerHost bounds concurrent requests to one registry host (default
	// 16). Streaming uploads are bounded by the copy engine instead.
	MaxRequestsPerHost int
	// MonolithicMax: blobs up to this size are uploaded in one PUT (default 4 MiB);
	// bigger blobs are streamed with PATCH then committed with PUT.
	MonolithicMax int64
	// Transport is the base HTTP transport (default: a tuned clone of
	// http.DefaultTransport).
	Transport http.RoundTripper
	// UserAgent is sent with every request (default "airlock").
	UserAgent string
	// Logger receives retry notices at debug level; nil discards.
	Logger *slog.Logger
}

// Registry is an endpoint.Source and endpoint.Destination for any registry host.
// Repositories are full names: "quay.io/ns/name", "127.0.0.1:5000/a/b".
type Registry struct {
	opts     RegistryOptions
	policy   RetryPolicy
	keychain authn.Keychain
	base     http.RoundTripper
	log      *slog.Logger

	mu    sync.Mutex
	hosts map[string]*regHost // by host + credential fingerprint + repository group

	repoKey   map[string]string              // repository + host key → key in hosts
	groupFill map[string]int                 // host key → repositories in its current group
	groupNo   map[string]int                 // host key → current group number
	sems      map[string]chan struct{}       // by host
	creds     map[string]authn.Authenticator // by repo
}

// reposPerTransport bounds how many repositories share one authenticated
// transport (and so the scopes of its token requests).
const reposPerTransport = 32

type regHost struct {
	mu     sync.Mutex
	rt     http.RoundTripper
	client *http.Client
	reg    name.Registry
}

var (
	_ endpoint.Source      = (*Registry)(nil)
	_ endpoint.Destination = (*Registry)(nil)
)

// NewRegistry returns a registry endpoint.
func NewRegistry(opts RegistryOptions) *Registry {
	p := opts.Retry
	switch {
	case opts.RetryTimes == 0:
		p.Times = defaultRetryTimes
	case opts.RetryTimes < 0:
		p.Times = 0
	default:
		p.Times = opts.RetryTimes
	}
	p = p.withDefaults()
	if opts.MaxRequestsPerHost <= 0 {
		opts.MaxRequestsPerHost = 16
	}
	if opts.MonolithicMax <= 0 {
		opts.MonolithicMax = 4 << 20
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "airlock"
	}
	kc := opts.Keychain
	if kc == nil {
		kc = AuthKeychain(opts.AuthFile)
	}
	base := opts.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		t.MaxIdleConns = 256
		t.TLSClientConfig = &tls.Config{
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: opts.SkipTLSVerify, //nolint:gosec // explicit --tls-verify=false
			RootCAs:            opts.RootCAs,
		}
		base = t
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Registry{
		opts: opts, policy: p, keychain: kc, log: log,
		hosts: map[string]*regHost{}, repoKey: map[string]string{}, groupFill: map[string]int{}, groupNo: map[string]int{}, sems: map[string]chan struct{}{}, creds: map[string]authn.Authenticator{},
	}
	r.base = &retryTransport{
		inner:  &schemeGuard{inner: base, allow: r.allowHTTP},
		policy: p,
		onRetry: func(req *http.Request, attempt int, reason string) {
			r.log.Debug("retrying registry request", "method", req.Method, "url", redactURL(req.URL), "attempt", attempt, "reason", reason)
		},
	}
	return r
}

// allowHTTP reports whether plain HTTP may be used for host.
func (r *Registry) allowHTTP(host string) bool {
	return r.opts.SkipTLSVerify || isLoopbackHost(host)
}

func isLoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// schemeGuard refuses plain-HTTP requests to hosts where TLS is required.
type schemeGuard struct {
	inner http.RoundTripper
	allow func(host string) bool
}

func (g *schemeGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.allow(req.URL.Host) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refusing plain HTTP to %s: TLS verification is on (use --src-tls-verify=false or --dest-tls-verify=false for an insecure registry)", req.URL.Host)
	}
	return g.inner.RoundTrip(req)
}

// splitRepo splits "host/path" into host and path.
func splitRepo(repo string) (host, path string, err error) {
	i := strings.IndexByte(repo, '/')
	if i <= 0 || i == len(repo)-1 {
		return "", "", fmt.Errorf("repository %q: want host/path (for example quay.io/ns/name)", repo)
	}
	host, path = repo[:i], repo[i+1:]
	if host == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	return host, path, nil
}

func (r *Registry) authFor(host, repo string) (authn.Authenticator, error) {
	r.mu.Lock()
	a, ok := r.creds[repo]
	r.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := r.keychain.Resolve(repoResource{host: host, repo: repo})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.creds[repo] = a
	r.mu.Unlock()
	return a, nil
}

func authFingerprint(a authn.Authenticator) string {
	cfg, err := a.Authorization()
	if err != nil || cfg == nil {
		return "anonymous"
	}
	h := sha256.Sum256([]byte(cfg.Username + "\x00" + cfg.Password + "\x00" + cfg.Auth + "\x00" + cfg.IdentityToken + "\x00" + cfg.RegistryToken))
	return hex.EncodeToString(h[:8])
}

// client returns the authenticated HTTP client for repo (one per host and
// credential, created on first use: ping, then token exchange).
func (r *Registry) client(ctx context.Context, repo string, push bool) (*http.Client, string, string, error) {
	host, path, err := splitRepo(repo)
	if err != nil {
		return nil, "", "", err
	}
	auth, err := r.authFor(host, repo)
	if err != nil {
		return nil, "", "", err
	}
	// Repositories of one host share a transport (connections, tokens) in groups:
	// a bearer transport adds every repository it meets to the scopes of its
	// token requests, which would grow without bound over the hundreds of
	// repositories a catalog names on one registry.
	hk := host + "\x00" + authFingerprint(auth)
	r.mu.Lock()
	key, ok := r.repoKey[repo+"\x00"+hk]
	if !ok {
		if r.groupFill[hk] >= reposPerTransport {
			r.groupNo[hk]++
			r.groupFill[hk] = 0
		}
		r.groupFill[hk]++
		key = fmt.Sprintf("%s\x00%d", hk, r.groupNo[hk])
		r.repoKey[repo+"\x00"+hk] = key
	}
	h := r.hosts[key]
	if h == nil {
		h = &regHost{}
		r.hosts[key] = h
	}
	sem := r.sems[host]
	if sem == nil {
		sem = make(chan struct{}, r.opts.MaxRequestsPerHost)
		r.sems[host] = sem
	}
	r.mu.Unlock()

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client == nil {
		var nopts []name.Option
		if r.allowHTTP(host) {
			nopts = append(nopts, name.Insecure)
		}
		reg, err := name.NewRegistry(host, nopts...)
		if err != nil {
			return nil, "", "", fmt.Errorf("registry host %q: %w", host, err)
		}
		scopes := []string{"repository:" + path + ":pull"}
		if push {
			scopes = []string{"repository:" + path + ":push,pull"}
		}
		rt, err := transport.NewWithContext(ctx, reg, auth, transport.NewUserAgent(r.base, r.opts.UserAgent), scopes)
		if err != nil {
			return nil, "", "", fmt.Errorf("connect to registry %s: %w", host, err)
		}
		h.reg = reg
		h.rt = rt
		h.client = &http.Client{Transport: &hostLimiter{inner: rt, sem: sem}}
	}
	base := h.reg.Scheme() + "://" + h.reg.RegistryStr() + "/v2/" + path
	return h.client, base, path, nil
}

// hostLimiter bounds in-flight requests to one host: a slot is held until the
// response headers arrive. Streaming uploads (a body without GetBody) are not
// limited here, so that an upload reading from another request never waits for a
// slot (no deadlock); the copy engine bounds those.
type hostLimiter struct {
	inner http.RoundTripper
	sem   chan struct{}
}

func (l *hostLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return l.inner.RoundTrip(req)
	}
	select {
	case l.sem <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	defer func() { <-l.sem }()
	return l.inner.RoundTrip(req)
}

func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

// statusError reads a bounded part of resp's body into an *HTTPStatusError.
func statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	e := &HTTPStatusError{Method: resp.Request.Method, URL: redactURL(resp.Request.URL), StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	e.retryAfter, e.hasRetry = parseRetryAfter(resp.Header.Get("Retry-After"))
	return e
}

func (r *Registry) do(ctx context.Context, c *http.Client, method, u string, body []byte, hdr map[string]string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	return resp, redactErr(err)
}

// redactErr strips credentials and query strings (pre-signed CDN redirects carry
// signatures there) from the URL of a transport error, so that no secret reaches a
// log, an error message or results.json.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			ue.URL = redactURL(u)
		} else {
			ue.URL = "(unparsable URL)"
		}
	}
	return err
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// Manifest implements endpoint.Source. A manifest fetched by digest is verified.
func (r *Registry) Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	c, base, _, err := r.client(ctx, repo, false)
	if err != nil {
		return endpoint.Manifest{}, err
	}
	var m endpoint.Manifest
	err = r.withRetry(ctx, func() error {
		resp, err := r.do(ctx, c, http.MethodGet, base+"/manifests/"+reference, nil, map[string]string{"Accept": oci.ManifestAccept})
		if err != nil {
			return err
		}
		defer drain(resp)
		if resp.StatusCode != http.StatusOK {
			return statusError(resp)
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, oci.MaxManifestSize+1))
		if err != nil {
			return err
		}
		if len(raw) > oci.MaxManifestSize {
			return fmt.Errorf("manifest %s@%s is larger than %d bytes", repo, reference, oci.MaxManifestSize)
		}
		m = endpoint.Manifest{Raw: raw, Digest: digest.FromBytes(raw), MediaType: oci.MediaTypeOf(resp.Header.Get("Content-Type"), raw)}
		if want, perr := digest.Parse(reference); perr == nil && want != m.Digest {
			return &refetchError{fmt.Errorf("content has digest %s: %w", m.Digest, ErrDigestMismatch)}
		}
		return nil
	})
	if err != nil {
		return endpoint.Manifest{}, fmt.Errorf("get manifest %s:%s: %w", repo, reference, err)
	}
	return m, nil
}

// withRetry retries f on errors the transport could not retry itself (a body
// cut while being read).
func (r *Registry) withRetry(ctx context.Context, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil || attempt >= r.policy.Times || !isRetryable(err) {
			return err
		}
		var se *HTTPStatusError
		if errors.As(err, &se) {
			return err // the transport already retried status codes
		}
		if serr := sleepCtx(ctx, r.policy.delay(attempt+1, 0, false)); serr != nil {
			return err
		}
	}
}

// Blob implements endpoint.Source. The reader resumes with a Range request when
// the connection breaks or the body ends early; the caller verifies the digest.
func (r *Registry) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	c, base, _, err := r.client(ctx, repo, false)
	if err != nil {
		return nil, err
	}
	br := &regBlobReader{ctx: ctx, r: r, c: c, url: base + "/blobs/" + d.Digest.String(), repo: repo, d: d}
	if err := br.open(); err != nil {
		return nil, fmt.Errorf("get blob %s@%s: %w", repo, d.Digest, err)
	}
	return br, nil
}

// errShortBody marks a blob body that ended before its declared size.
var errShortBody = errors.New("blob body ended early")

type regBlobReader struct {
	ctx      context.Context
	r        *Registry
	c        *http.Client
	url      string
	repo     string
	d        endpoint.Descriptor
	body     io.ReadCloser
	off      int64
	attempts int
}

func (b *regBlobReader) open() error {
	for {
		err := b.open1()
		if err == nil {
			return nil
		}
		if !isRetryable(err) || b.attempts >= b.r.policy.Times {
			return err
		}
		var se *HTTPStatusError
		if errors.As(err, &se) {
			return err
		}
		b.attempts++
		if serr := sleepCtx(b.ctx, b.r.policy.delay(b.attempts, 0, false)); serr != nil {
			return serr
		}
	}
}

func (b *regBlobReader) open1() error {
	hdr := map[string]string{}
	if b.off > 0 {
		hdr["Range"] = "bytes=" + strconv.FormatInt(b.off, 10) + "-"
	}
	resp, err := b.r.do(b.ctx, b.c, http.MethodGet, b.url, nil, hdr)
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if b.off > 0 { // server ignored Range: skip what we already have
			if _, err := io.CopyN(io.Discard, resp.Body, b.off); err != nil {
				resp.Body.Close()
				return err
			}
		}
	case resp.StatusCode == http.StatusPartialContent && b.off > 0:
		if !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(b.off, 10)+"-") {
			resp.Body.Close()
			return fmt.Errorf("resume blob at byte %d: unexpected Content-Range %q", b.off, resp.Header.Get("Content-Range"))
		}
	default:
		defer drain(resp)
		return statusError(resp)
	}
	b.body = resp.Body
	return nil
}

func (b *regBlobReader) Read(p []byte) (int, error) {
	for {
		if b.body == nil {
			if err := b.open(); err != nil {
				return 0, err
			}
		}
		n, err := b.body.Read(p)
		b.off += int64(n)
		if b.d.Size > 0 && b.off > b.d.Size {
			return n, fmt.Errorf("blob %s@%s is longer than its declared %d bytes: %w", b.repo, b.d.Digest, b.d.Size, ErrDigestMismatch)
		}
		if err == io.EOF && b.d.Size > 0 && b.off < b.d.Size {
			err = errShortBody
		}
		if err == nil || err == io.EOF {
			return n, err
		}
		// Broken stream: resume from b.off.
		b.body.Close()
		b.body = nil
		if !isRetryable(err) || b.attempts >= b.r.policy.Times || b.ctx.Err() != nil {
			return n, fmt.Errorf("read blob %s@%s at byte %d: %w", b.repo, b.d.Digest, b.off, err)
		}
		b.attempts++
		b.r.log.Debug("resuming blob download", "repo", b.repo, "digest", b.d.Digest, "offset", b.off, "attempt", b.attempts, "reason", err.Error())
		if serr := sleepCtx(b.ctx, b.r.policy.delay(b.attempts, 0, false)); serr != nil {
			return n, serr
		}
		if n > 0 {
			return n, nil
		}
	}
}

func (b *regBlobReader) Close() error {
	if b.body != nil {
		return b.body.Close()
	}
	return nil
}

// BlobExists implements endpoint.Destination (HEAD).
func (r *Registry) BlobExists(ctx context.Context, repo string, d endpoint.Descriptor) (bool, error) {
	c, base, _, err := r.client(ctx, repo, true)
	if err != nil {
		return false, err
	}
	resp, err := r.do(ctx, c, http.MethodHead, base+"/blobs/"+d.Digest.String(), nil, nil)
	if err != nil {
		return false, fmt.Errorf("check blob %s@%s: %w", repo, d.Digest, err)
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("check blob %s@%s: %w", repo, d.Digest, statusError(resp))
}

// MountBlob implements endpoint.Destination: a cross-repository mount, possible
// only within one registry host. A refused mount returns false.
func (r *Registry) MountBlob(ctx context.Context, repo, from string, d endpoint.Descriptor) (bool, error) {
	host, _, err := splitRepo(repo)
	if err != nil {
		return false, err
	}
	fhost, fpath, err := splitRepo(from)
	if err != nil || fhost != host || from == repo {
		return false, nil
	}
	c, base, _, err := r.client(ctx, repo, true)
	if err != nil {
		return false, err
	}
	q := url.Values{"mount": {d.Digest.String()}, "from": {fpath}}
	resp, err := r.do(ctx, c, http.MethodPost, base+"/blobs/uploads/?"+q.Encode(), nil, nil)
	if err != nil {
		return false, fmt.Errorf("mount blob %s into %s from %s: %w", d.Digest, repo, from, err)
	}
	defer drain(resp)
	switch {
	case resp.StatusCode == http.StatusCreated:
		return true, nil
	case resp.StatusCode == http.StatusAccepted:
		// The registry opened an upload session instead: cancel it.
		if loc, err := uploadLocation(resp); err == nil {
			r.cancelUpload(ctx, c, loc)
		}
		return false, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return false, nil
	}
	return false, fmt.Errorf("mount blob %s into %s: %w", d.Digest, repo, statusError(resp))
}

func uploadLocation(resp *http.Response) (*url.URL, error) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, fmt.Errorf("registry answered %s without an upload Location", resp.Status)
	}
	u, err := resp.Request.URL.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("bad upload Location %q: %w", loc, err)
	}
	return u, nil
}

func (r *Registry) cancelUpload(ctx context.Context, c *http.Client, loc *url.URL) {
	// Best effort, and bounded: Ctrl-C must not wait on an unreachable registry.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if resp, err := r.do(ctx, c, http.MethodDelete, loc.String(), nil, nil); err == nil {
		drain(resp)
	}
}

// PutBlob implements endpoint.Destination. Small blobs are read (and verified)
// into memory and sent with one PUT; bigger ones stream with PATCH through a
// verifying reader and are committed with the final PUT only when digest and
// size matched. On any error the upload session is cancelled.
func (r *Registry) PutBlob(ctx context.Context, repo string, d endpoint.Descriptor, rd io.Reader) error {
	if err := d.Digest.Validate(); err != nil {
		return fmt.Errorf("put blob into %s: %w", repo, err)
	}
	v := oci.AsVerifier(rd, d)
	c, base, _, err := r.client(ctx, repo, true)
	if err != nil {
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("put blob %s@%s: %w", repo, d.Digest, err) }
	resp, err := r.do(ctx, c, http.MethodPost, base+"/blobs/uploads/", nil, nil)
	if err != nil {
		return wrap(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		defer drain(resp)
		return wrap(statusError(resp))
	}
	loc, err := uploadLocation(resp)
	drain(resp)
	if err != nil {
		return wrap(err)
	}
	if d.Size >= 0 && d.Size <= r.opts.MonolithicMax {
		buf := make([]byte, 0, d.Size+1)
		b := bytes.NewBuffer(buf)
		_, err := b.ReadFrom(v)
		buf = b.Bytes()
		if err != nil {
			r.cancelUpload(ctx, c, loc)
			return wrap(err)
		}
		return r.commitUpload(ctx, c, loc, d, buf, wrap)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, loc.String(), v)
	if err != nil {
		return wrap(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.ContentLength = d.Size
	resp, err = c.Do(req)
	err = redactErr(err)
	if v.Err() != nil { // digest or size mismatch, or a source read error
		if err == nil {
			drain(resp)
		}
		r.cancelUpload(ctx, c, loc)
		return wrap(v.Err())
	}
	if err != nil {
		r.cancelUpload(ctx, c, loc)
		return wrap(err)
	}
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusCreated {
		err := statusError(resp)
		drain(resp)
		r.cancelUpload(ctx, c, loc)
		return wrap(err)
	}
	if next, lerr := uploadLocation(resp); lerr == nil {
		loc = next
	}
	drain(resp)
	if !v.Verified() {
		r.cancelUpload(ctx, c, loc)
		return wrap(fmt.Errorf("upload ended after %d of %d bytes: %w", v.N(), d.Size, ErrDigestMismatch))
	}
	return r.commitUpload(ctx, c, loc, d, nil, wrap)
}

func (r *Registry) commitUpload(ctx context.Context, c *http.Client, loc *url.URL, d endpoint.Descriptor, body []byte, wrap func(error) error) error {
	u := *loc
	q := u.Query()
	q.Set("digest", d.Digest.String())
	u.RawQuery = q.Encode()
	hdr := map[string]string{"Content-Type": "application/octet-stream"}
	resp, err := r.do(ctx, c, http.MethodPut, u.String(), body, hdr)
	if err != nil {
		r.cancelUpload(ctx, c, loc)
		return wrap(err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusAccepted {
		return wrap(statusError(resp))
	}
	return nil
}

// ManifestExists implements endpoint.Destination (HEAD, GET when the registry
// does not return a digest for a tag).
func (r *Registry) ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error) {
	desc, err := r.head(ctx, repo, reference)
	if err != nil {
		var se *HTTPStatusError
		if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, err
	}
	return desc.Digest == d, nil
}

// head returns the descriptor of repo:reference (HEAD, GET fallback).
func (r *Registry) head(ctx context.Context, repo, reference string) (endpoint.Descriptor, error) {
	c, base, _, err := r.client(ctx, repo, false)
	if err != nil {
		return endpoint.Descriptor{}, err
	}
	resp, err := r.do(ctx, c, http.MethodHead, base+"/manifests/"+reference, nil, map[string]string{"Accept": oci.ManifestAccept})
	if err != nil {
		return endpoint.Descriptor{}, fmt.Errorf("check manifest %s:%s: %w", repo, reference, err)
	}
	drain(resp)
	if resp.StatusCode == http.StatusNotFound {
		return endpoint.Descriptor{}, &HTTPStatusError{Method: http.MethodHead, URL: redactURL(resp.Request.URL), StatusCode: http.StatusNotFound}
	}
	if resp.StatusCode == http.StatusOK {
		dg, derr := digest.Parse(resp.Header.Get("Docker-Content-Digest"))
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if derr == nil && mt != "" && resp.ContentLength > 0 {
			return endpoint.Descriptor{MediaType: mt, Digest: dg, Size: resp.ContentLength}, nil
		}
	}
	m, err := r.Manifest(ctx, repo, reference)
	if err != nil {
		return endpoint.Descriptor{}, err
	}
	return endpoint.Descriptor{MediaType: m.MediaType, Digest: m.Digest, Size: int64(len(m.Raw))}, nil
}

// PutManifest implements endpoint.Destination.
func (r *Registry) PutManifest(ctx context.Context, repo, reference string, m endpoint.Manifest) error {
	if m.Digest != "" && digest.FromBytes(m.Raw) != m.Digest {
		return fmt.Errorf("put manifest %s:%s: content does not match %s: %w", repo, reference, m.Digest, ErrDigestMismatch)
	}
	c, base, _, err := r.client(ctx, repo, true)
	if err != nil {
		return err
	}
	mt := m.MediaType
	if mt == "" {
		mt = oci.MediaTypeOf("", m.Raw)
	}
	resp, err := r.do(ctx, c, http.MethodPut, base+"/manifests/"+reference, m.Raw, map[string]string{"Content-Type": mt})
	if err != nil {
		return fmt.Errorf("put manifest %s:%s: %w", repo, reference, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("put manifest %s:%s: %w", repo, reference, statusError(resp))
	}
	return nil
}

// Resolve returns the descriptor of an image reference ("host/path:tag" or
// "host/path@sha256:..."): a HEAD by tag, with a GET fallback.
func (r *Registry) Resolve(ctx context.Context, ref string) (endpoint.Descriptor, error) {
	repo, reference, err := splitImageRef(ref)
	if err != nil {
		return endpoint.Descriptor{}, err
	}
	d, err := r.head(ctx, repo, reference)
	if err != nil {
		return endpoint.Descriptor{}, fmt.Errorf("resolve %s: %w", ref, err)
	}
	return d, nil
}

// splitImageRef splits "host/path:tag", "host/path@digest" or
// "host/path:tag@digest" (the digest wins) into repository and reference.
func splitImageRef(ref string) (repo, reference string, err error) {
	if i := strings.Index(ref, "@"); i >= 0 {
		dg, derr := digest.Parse(ref[i+1:])
		if derr != nil {
			return "", "", fmt.Errorf("image reference %q: bad digest: %w", ref, derr)
		}
		repo = ref[:i]
		if j := strings.LastIndex(repo, ":"); j > strings.LastIndex(repo, "/") {
			repo = repo[:j]
		}
		return repo, dg.String(), nil
	}
	j := strings.LastIndex(ref, ":")
	if j <= strings.LastIndex(ref, "/") {
		return ref, "latest", nil
	}
	if _, _, err := splitRepo(ref[:j]); err != nil {
		return "", "", err
	}
	return ref[:j], ref[j+1:], nil
}
