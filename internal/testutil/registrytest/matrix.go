package registrytest

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// The kinds of registry of the matrix (docs/registries.md): each is a real
// registry implementation nobody here wrote, configured as users run it.
const (
	// Distribution28 is Debian's docker-registry binary (CNCF Distribution
	// 2.8, the registry:2 image): anonymous, plain HTTP, deletes enabled; it
	// cannot delete a tag alone.
	Distribution28 = "distribution-2.8"
	// DistributionV3 is CNCF Distribution v3, in process: anonymous, plain HTTP.
	DistributionV3 = "distribution-v3"
	// TokenAuth is Distribution v3 with `auth: token` and a TokenServer, as
	// quay.io and registry.redhat.io: a 401 Bearer challenge (realm, service,
	// scope), short-lived tokens per repository scope, a push user and a
	// pull-only user.
	TokenAuth = "token-auth"
	// CDNRedirect is Distribution v3 whose blob GETs answer 307 to a second
	// host with expiring signed URLs, as quay.io's.
	CDNRedirect = "cdn-redirect"
	// PrivateCA is Distribution v3 over HTTPS with a certificate of a private
	// CA, trusted through CertDir.
	PrivateCA = "tls-private-ca"
	// Htpasswd is Distribution v3 with `auth: htpasswd` (bcrypt), over HTTPS
	// with a private CA as Distribution requires for basic authentication.
	Htpasswd = "htpasswd"
)

// DistributionV3Sparse is DistributionV3 configured to accept sparse indexes
// (validation.manifests.indexes.platforms: none), as a site mirroring platform
// subsets sets it. StartKind knows it; it is not one of Kinds (every kind of
// the matrix runs with its default configuration).
const DistributionV3Sparse = "distribution-v3-sparse"

// Distribution28NoDelete is Distribution28 with deletes disabled (its
// default: storage.delete.enabled false), which answers every DELETE with
// 405 UNSUPPORTED. StartKind knows it; it is not one of Kinds.
const Distribution28NoDelete = "distribution-2.8-nodelete"

// Kinds lists every kind, in the matrix's order.
var Kinds = []string{Distribution28, DistributionV3, TokenAuth, CDNRedirect, PrivateCA, Htpasswd}

// TokenTTL is how long a TokenAuth token lives: short, so that every run of
// more than a few seconds refreshes its tokens.
const TokenTTL = 2 * time.Second

// Credentials are a user name and password ("" for anonymous access).
type Credentials struct{ Username, Password string }

// Target is one running registry of the matrix and everything a test needs to
// reach it: its host, the certificate folder to trust, credentials, and
// inspection through go-containerregistry (never airlock's own client).
type Target struct {
	// Kind is one of Kinds; it names the matrix's subtests.
	Kind string
	// Host is "127.0.0.1:PORT".
	Host string
	// CertDir is a folder holding ca.crt of the private CA the registry's
	// certificate chains to (for --src-cert-dir/--dest-cert-dir); "" when the
	// registry speaks plain HTTP.
	CertDir string
	// CA is the private CA (nil for plain HTTP).
	CA *CA
	// Push may push, pull and delete; Pull may only pull (equal to Push where
	// the registry has no pull-only users). Zero values mean anonymous.
	Push, Pull Credentials
	// Root is the registry's storage folder.
	Root string
	// TagDelete reports whether DELETE /v2/NAME/manifests/TAG works
	// (Distribution 2.x answers 400 DIGEST_INVALID).
	TagDelete bool
	// Token is the token server of a TokenAuth registry; CDN the blob host of
	// a CDNRedirect registry.
	Token *TokenServer
	CDN   *CDN
}

// Missing says why kind cannot run on this machine ("" when it can).
func Missing(kind string) string {
	if kind == Distribution28 || kind == Distribution28NoDelete {
		return Distribution28Missing()
	}
	return ""
}

// StartKind starts a registry of kind, stopped with t.Cleanup. It skips t when
// the kind cannot run here (Missing).
func StartKind(t testing.TB, kind string) *Target {
	t.Helper()
	if why := Missing(kind); why != "" {
		t.Skipf("registry %s: %s", kind, why)
	}
	tg := &Target{Kind: kind, TagDelete: true}
	switch kind {
	case Distribution28, Distribution28NoDelete:
		d := startDistribution28(t, kind == Distribution28NoDelete)
		tg.Host, tg.Root, tg.TagDelete = d.host, d.root, false
	case DistributionV3, DistributionV3Sparse:
		d := startDistribution(t, distOptions{sparse: kind == DistributionV3Sparse})
		tg.Host, tg.Root = d.host, d.root
	case TokenAuth:
		tg.Push = Credentials{"pusher", "push-secret"}
		tg.Pull = Credentials{"reader", "read-secret"}
		tg.Token = NewTokenServer(t, "airlock-test-registry", TokenTTL, map[string]TokenUser{
			tg.Push.Username: {Password: tg.Push.Password, Push: true},
			tg.Pull.Username: {Password: tg.Pull.Password},
		})
		d := startDistribution(t, distOptions{token: tg.Token})
		tg.Host, tg.Root = d.host, d.root
	case CDNRedirect:
		tg.CDN = newCDN(t, time.Minute)
		d := startDistribution(t, distOptions{wrap: tg.CDN.front})
		tg.Host, tg.Root = d.host, d.root
	case PrivateCA:
		tg.CA = NewCA(t)
		d := startDistribution(t, distOptions{ca: tg.CA})
		tg.Host, tg.Root, tg.CertDir = d.host, d.root, tg.CA.CertDir(t)
	case Htpasswd:
		tg.CA = NewCA(t)
		tg.Push = Credentials{"alice", "htpasswd-secret"}
		tg.Pull = tg.Push
		d := startDistribution(t, distOptions{ca: tg.CA, htpasswd: map[string]string{tg.Push.Username: tg.Push.Password}})
		tg.Host, tg.Root, tg.CertDir = d.host, d.root, tg.CA.CertDir(t)
	default:
		t.Fatalf("registrytest: unknown registry kind %q (want one of %v)", kind, Kinds)
	}
	return tg
}

// Matrix starts one registry of every kind that can run here (Missing ones
// are logged and left out).
func Matrix(t testing.TB) []*Target {
	t.Helper()
	var out []*Target
	for _, k := range Kinds {
		if why := Missing(k); why != "" {
			t.Logf("registry matrix: %s left out: %s", k, why)
			continue
		}
		out = append(out, StartKind(t, k))
	}
	return out
}

// TLS reports whether the registry speaks HTTPS.
func (tg *Target) TLS() bool { return tg.CA != nil }

// AuthFile writes a containers auth.json holding c for the registry (see
// WriteAuthFile) and returns its path.
func (tg *Target) AuthFile(t testing.TB, c Credentials) string {
	t.Helper()
	return WriteAuthFile(t, map[string]Credentials{tg.Host: c})
}

// Transport is an HTTP transport trusting the registry's CA.
func (tg *Target) Transport() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tg.CA != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: tg.CA.Pool(), MinVersion: tls.VersionTLS12}
	}
	return tr
}

// Remote returns go-containerregistry options reaching the registry as c.
func (tg *Target) Remote(c Credentials) []remote.Option {
	var a authn.Authenticator = authn.Anonymous
	if c.Username != "" {
		a = &authn.Basic{Username: c.Username, Password: c.Password}
	}
	return []remote.Option{remote.WithTransport(tg.Transport()), remote.WithAuth(a)}
}

// Ref parses "REPO:TAG" or "REPO@DIGEST" (a repository path without the host)
// as a reference on the registry.
func (tg *Target) Ref(ref string) (name.Reference, error) {
	var opts []name.Option
	if !tg.TLS() {
		opts = append(opts, name.Insecure)
	}
	return name.ParseReference(tg.Host+"/"+ref, opts...)
}

// Digest returns the digest the registry serves for ref ("REPO:TAG" or
// "REPO@DIGEST"), read with go-containerregistry as the Push user; "" and no
// error when the registry does not have it.
func (tg *Target) Digest(ctx context.Context, ref string) (string, error) {
	r, err := tg.Ref(ref)
	if err != nil {
		return "", err
	}
	d, err := remote.Head(r, append(tg.Remote(tg.Push), remote.WithContext(ctx))...)
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return d.Digest.String(), nil
}

// Tags lists the tags of repo (a path without the host); none when the
// repository does not exist.
func (tg *Target) Tags(ctx context.Context, repo string) ([]string, error) {
	var opts []name.Option
	if !tg.TLS() {
		opts = append(opts, name.Insecure)
	}
	r, err := name.NewRepository(tg.Host+"/"+repo, opts...)
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(r, append(tg.Remote(tg.Push), remote.WithContext(ctx))...)
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	return tags, err
}

// Repositories lists every repository of the registry (/v2/_catalog).
func (tg *Target) Repositories(ctx context.Context) ([]string, error) {
	var opts []name.Option
	if !tg.TLS() {
		opts = append(opts, name.Insecure)
	}
	reg, err := name.NewRegistry(tg.Host, opts...)
	if err != nil {
		return nil, err
	}
	return remote.Catalog(ctx, reg, tg.Remote(tg.Push)...)
}
