package signature

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// Store gives the signatures of a manifest digest, in order (signature-1, 2, …).
// None found is an empty list and no error.
type Store interface {
	Signatures(ctx context.Context, d digest.Digest) ([][]byte, error)
}

// Environment variables oc-mirror reads, read here with the same meaning.
const (
	// EnvURL overrides the signature store's URL (StoreOptions.URL wins over it).
	EnvURL = "OCP_SIGNATURE_URL"
	// EnvKeys names a file of armored public keys that replaces the built-in
	// keys (an explicit path given to ResolveKeys wins over it).
	EnvKeys = "OCP_SIGNATURE_VERIFICATION_PK"
)

// DefaultURL is Red Hat's signature store for OpenShift releases.
const DefaultURL = "https://mirror.openshift.com/pub/openshift-v4/signatures/openshift/release"

// Limits of one fetch.
const (
	// DefaultMaxSignatures is how many signature-N are asked for at most per
	// digest (a hostile store cannot keep a run asking forever).
	DefaultMaxSignatures = 16
	// DefaultMaxBytes is the largest signature accepted (Red Hat's are under
	// 1 KiB; containers/image allows 4 MiB, which would be too large for a
	// ConfigMap anyway).
	DefaultMaxBytes = 64 << 10
	// DefaultTimeout is the deadline of each request.
	DefaultTimeout = 30 * time.Second
)

// StoreOptions configure NewStore. The zero value is Red Hat's store (or
// OCP_SIGNATURE_URL), verified TLS, the project's retry policy.
type StoreOptions struct {
	// URL is the store's base URL (--release-signature-url); "" reads
	// OCP_SIGNATURE_URL, then DefaultURL. http and https only.
	URL string
	// Client sends the requests; nil is a client with TLS verification on and
	// the proxy from the environment.
	Client *http.Client
	// Timeout is each request's deadline (0: DefaultTimeout).
	Timeout time.Duration
	// Retry is the retry policy (nil: retry.OrDefault(nil)).
	Retry *retry.Policy
	// MaxSignatures caps N (0: DefaultMaxSignatures).
	MaxSignatures int
	// MaxBytes caps one signature's size (0: DefaultMaxBytes).
	MaxBytes int64
	// Log receives retries (nil: none).
	Log *slog.Logger
}

// NewStore returns the signature store at o.URL (or OCP_SIGNATURE_URL, or
// DefaultURL). A URL that is not http(s) is an error naming where it came from.
func NewStore(o StoreOptions) (Store, error) {
	raw, from := o.URL, "the signature store URL"
	if raw == "" {
		if env := os.Getenv(EnvURL); env != "" {
			raw, from = env, EnvURL
		} else {
			raw = DefaultURL
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q is not an http(s) URL: give the base URL of a signature store (…/sha256=<hex>/signature-N below it)", from, raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s %q carries credentials: signature stores are read anonymously", from, u.Redacted())
	}
	s := &httpStore{base: strings.TrimSuffix(u.String(), "/"), client: o.Client, timeout: o.Timeout,
		policy: retry.OrDefault(o.Retry), max: o.MaxSignatures, maxBytes: o.MaxBytes, log: o.Log}
	if s.client == nil {
		s.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}}
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.max <= 0 {
		s.max = DefaultMaxSignatures
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxBytes
	}
	return s, nil
}

type httpStore struct {
	base     string
	client   *http.Client
	timeout  time.Duration
	policy   retry.Policy
	max      int
	maxBytes int64
	log      *slog.Logger
}

func (s *httpStore) String() string { return s.base }

// ErrTooLarge is a signature larger than the store's MaxBytes.
var ErrTooLarge = retry.ErrTooLarge

func (s *httpStore) Signatures(ctx context.Context, d digest.Digest) ([][]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("release signatures: digest %q: %w", d, err)
	}
	var out [][]byte
	for n := 1; n <= s.max; n++ {
		u := fmt.Sprintf("%s/%s=%s/signature-%d", s.base, d.Algorithm(), d.Encoded(), n)
		body, err := s.policy.GetDocument(ctx, s.log, u, retry.Get{Client: s.client, Timeout: s.timeout, MaxBytes: s.maxBytes})
		if errors.Is(err, endpoint.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("release signatures of %s from %s: %w", d, s.base, err)
		}
		if len(body) == 0 {
			return nil, fmt.Errorf("release signatures of %s from %s: %s: empty answer", d, s.base, u)
		}
		out = append(out, body)
	}
	return out, nil
}
