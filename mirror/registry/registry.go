// Package registry is airlock's one registry client (Client): the registry
// HTTP API (manifests, blobs with resumable reads and streaming uploads,
// mounts, tags, deletes), auth (auth.json, docker config, registries.conf
// credentials), TLS and plain-HTTP rules, where a source repository is read
// (registries.conf mirrors, rewrites, blocked and insecure registries:
// RegistriesConf), the one adaptive bound per host on the work touching it
// (shared with the copy engine: HostLimit), probing a registry before a run,
// timeouts on silent registries (Timeouts), manifest pushes the registry
// verifies (PutManifest), and remembering hosts found unreachable, stalled or
// failing (the circuit breaker, NoteFailure). What it knows of each host is
// kept together (hostState). Every request runs under the one retry policy
// (package retry) and has a deadline. An answer the client did not expect
// becomes the one typed registry error (endpoint.RegistryError), its body
// parsed once, where it is read.
//
// A Client is an endpoint.Source and an endpoint.Destination. It knows nothing
// about the copy engine, plans, catalogs or archives.
package registry

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
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// Options configures a registry endpoint. The zero value is secure: TLS
// verified, credentials from the default lookup, retry.DefaultTimes retries.
type Options struct {
	// AuthFile is --authfile; empty means the default lookup (see AuthKeychain).
	AuthFile string
	// Keychain overrides the auth file lookup when set.
	Keychain authn.Keychain
	// SkipTLSVerify is --src-tls-verify=false / --dest-tls-verify=false: do not
	// verify certificates, and allow plain HTTP. Plain HTTP is otherwise allowed
	// only for localhost and loopback addresses.
	SkipTLSVerify bool
	// TLSFlag is the flag that turns TLS verification off for this registry
	// ("--dest-tls-verify=false"), named in errors about TLS.
	TLSFlag string
	// RootCAs, when set, replaces the system trust store.
	RootCAs *x509.CertPool
	// CertDir is --src-cert-dir / --dest-cert-dir: a folder of *.crt
	// certificate authorities to trust besides RootCAs (or the system's) and
	// *.cert/*.key client certificates, used for every host. Empty means the
	// containers convention: certs.d/HOST[:PORT] under
	// ~/.config/containers, /etc/containers and /etc/docker.
	CertDir string
	// Retry is the retry policy (--retry-times); nil means retry.DefaultTimes.
	Retry *retry.Policy
	// MaxPerHost is the ceiling of each host's one adaptive bound on the work
	// touching it (default 64): requests in flight, and the copy engine's
	// blob transfers, which raises it to its own ceiling when that is higher
	// (see HostLimit). The bound starts at 16 and adapts (adaptive.Limit: it
	// grows while work queues and goes well, halves on 429, 5xx and answers
	// far slower than the host's best).
	MaxPerHost int
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
	// Timeouts bound how long a registry may stay silent (zero values: the
	// defaults, see Timeouts).
	Timeouts Timeouts
	// Sources, for a client that reads sources, is registries.conf: mirrors,
	// rewritten locations, blocked and insecure registries (see RegistriesConf).
	// nil reads every repository where its name says.
	Sources *RegistriesConf
	// KeepManifests, for a client that reads sources, is how many bytes of
	// manifests to keep (0: none): see manifestMemo.
	KeepManifests int64
}

// Client is an endpoint.Source and endpoint.Destination for any registry host.
// Repositories are full names: "quay.io/ns/name", "127.0.0.1:5000/a/b".
type Client struct {
	opts     Options
	policy   retry.Policy
	keychain authn.Keychain
	base     http.RoundTripper
	pings    *pingMemo // under the authenticated transports: base, pings answered once per host
	log      *slog.Logger

	mu    sync.Mutex
	hosts map[string]*hostState          // by host: everything known of it (hostOf)
	creds map[string]authn.Authenticator // by repository
	// altered are the revisions stored altered that the registry refused
	// to delete (AlteredKept).
	altered map[AlteredManifest]bool

	timeouts Timeouts
	memo     manifestMemo
}

// Policy is the retry policy of the client's operations, for work it hands
// to another engine (the copy engine copying a catalog image).
func (r *Client) Policy() retry.Policy { return r.policy }

// reposPerTransport bounds how many repositories share one authenticated
// transport (and so the scopes of its token requests).
const reposPerTransport = 32

var (
	_ endpoint.Source      = (*Client)(nil)
	_ endpoint.Destination = (*Client)(nil)
)

// New returns a registry endpoint.
func New(opts Options) *Client {
	p := retry.OrDefault(opts.Retry)
	if opts.MaxPerHost <= 0 {
		opts.MaxPerHost = DefaultMaxPerHost
	}
	if opts.MonolithicMax <= 0 {
		opts.MonolithicMax = 4 << 20
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "airlock"
	}
	kc := opts.Keychain
	if kc == nil {
		k := &containersKeychain{flag: opts.AuthFile}
		if opts.Sources != nil {
			k.regconf = opts.Sources.sys.SystemRegistriesConfPath
		}
		kc = k
	}
	var r *Client
	base := opts.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = largeWrites(t.DialContext)
		t.MaxIdleConnsPerHost = 64
		t.MaxIdleConns = 256
		t.TLSClientConfig = &tls.Config{
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: opts.SkipTLSVerify, //nolint:gosec // explicit --tls-verify=false
			RootCAs:            opts.RootCAs,
		}
		base = &certRouter{base: t, tmpl: t.Clone(), certDir: opts.CertDir, insecure: func(h string) bool { return r.insecureHost(h) }}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r = &Client{
		opts: opts, policy: p, keychain: kc, log: log,
		hosts: map[string]*hostState{}, creds: map[string]authn.Authenticator{}, timeouts: opts.Timeouts.withDefaults(),
	}
	// The transport never retries: retries belong to the operations (see
	// retry.Policy), so that one request is never retried by two layers.
	// Every request is watched for silence (see Timeouts).
	r.base = &schemeGuard{inner: &watchTransport{inner: base, r: r}, allow: r.allowHTTP}
	r.pings = &pingMemo{inner: r.base}
	return r
}

// allowHTTP reports whether plain HTTP may be used for host.
func (r *Client) allowHTTP(host string) bool {
	return r.opts.SkipTLSVerify || oci.IsLoopbackHost(host) || r.insecureHost(host)
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
		return nil, retry.Permanent(fmt.Errorf("refusing plain HTTP to %s: TLS verification is on (use --src-tls-verify=false or --dest-tls-verify=false for an insecure registry)", req.URL.Host))
	}
	if err := sendOnce(req); err != nil {
		return nil, err
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

func (r *Client) authFor(host, repo string) (authn.Authenticator, error) {
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
func (r *Client) client(ctx context.Context, repo string, push bool) (*http.Client, string, string, error) {
	repo = contacted(ctx, repo, push)
	host, path, err := splitRepo(repo)
	if err != nil {
		return nil, "", "", err
	}
	auth, err := r.authFor(host, repo)
	if err != nil {
		return nil, "", "", err
	}
	// Repositories of one host share a transport (connections, tokens) in
	// groups (see transportGroups).
	hs := r.hostOf(host)
	hs.mu.Lock()
	h, _ := hs.group(authFingerprint(auth), path, false)
	hs.mu.Unlock()

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
		rt, err := transport.NewWithContext(ctx, reg, auth, transport.NewUserAgent(r.pings, r.opts.UserAgent), groupScopes(hs, h, path, push))
		if err != nil {
			return nil, "", "", fmt.Errorf("connect to registry %s: %w", host, typedTransportError(err))
		}
		h.reg = reg
		h.rt = rt
		h.client = &http.Client{Transport: &hostLimiter{inner: rt, lim: hs.limit}}
	}
	base := h.reg.Scheme() + "://" + h.reg.RegistryStr() + "/v2/" + path
	return h.client, base, path, nil
}

func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

func (r *Client) do(ctx context.Context, c *http.Client, method, u string, body []byte, hdr map[string]string) (*http.Response, error) {
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
	return resp, redactErr(typedTransportError(err))
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
