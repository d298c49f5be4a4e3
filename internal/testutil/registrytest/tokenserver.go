package registrytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	disttoken "github.com/distribution/distribution/v3/registry/auth/token"
)

// TokenUser is an account of a TokenServer.
type TokenUser struct {
	Password string
	// Push grants push and delete on every repository (and the registry
	// catalog); without it the user may only pull.
	Push bool
}

// TokenServer is a small Docker token service (the "realm" of a
// `Bearer realm=…,service=…,scope=…` challenge) as quay.io and
// registry.redhat.io run: GET REALM?service=S&scope=repository:NAME:ACTIONS
// with HTTP basic credentials (or none, for anonymous) answers a JSON Web Token
// signed with ES256 whose access claim grants, per requested repository, the
// requested actions the user holds. Tokens expire after TTL (whole seconds,
// at least one), so a run longer than that must refresh them. Distribution
// verifies them against the server's certificate (rootcertbundle).
//
// The endpoint is served on the registry's own host at /v2/auth, as quay.io
// does: go-containerregistry (and so airlock) refuses a realm on another
// private or loopback address (an SSRF guard), whatever the port.
type TokenServer struct {
	realm   string
	key     *ecdsa.PrivateKey
	certDER []byte
	bundle  string
	service string
	issuer  string
	ttl     atomic.Int64 // time.Duration
	users   map[string]TokenUser
	// anonymousPull grants pull to a token request without credentials, as
	// quay.io does for public repositories (the WAN simulator's default).
	anonymousPull bool
	issued        atomic.Int64
	refusals      atomic.Int64
	expired       atomic.Int64

	mu      sync.Mutex
	expire  []expireRule
	revoked map[string]bool // tokens ExpireNext made expire
}

type expireRule struct {
	match       func(*http.Request) bool
	left, fired int
}

// NewTokenServer makes a token server; a registry started with it serves it.
func NewTokenServer(t testing.TB, service string, ttl time.Duration, users map[string]TokenUser) *TokenServer {
	t.Helper()
	s, err := newTokenServer(t.TempDir(), service, ttl, users)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTokenServer is NewTokenServer writing the signer's certificate (the
// registry's rootcertbundle) into dir.
func newTokenServer(dir, service string, ttl time.Duration, users map[string]TokenUser) (*TokenServer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "airlock test token signer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	bundle := filepath.Join(dir, "token-signer.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, fmt.Errorf("token server: %w", err)
	}
	s := &TokenServer{key: key, certDER: der, bundle: bundle, service: service, issuer: "airlock-test-issuer", users: users}
	s.SetTTL(ttl)
	return s, nil
}

// SetTTL changes the lifetime of the tokens issued from now on (at least a
// second); a test seeding a registry with a client that cannot refresh tokens
// mid-upload raises it meanwhile.
func (s *TokenServer) SetTTL(ttl time.Duration) {
	s.ttl.Store(int64(max(ttl, time.Second)))
}

// tokenPath is where a registry serves its token endpoint (quay.io's path).
const tokenPath = "/v2/auth"

// Realm is the token endpoint's URL.
func (s *TokenServer) Realm() string { return s.realm }

// ExpireNext makes the tokens of the next n requests that match expire just
// before they arrive: the registry answers them, and every later request
// carrying one of those tokens, 401 with an invalid_token challenge for the
// request's scope. A token running out at the worst moment, mid-upload. Arm
// one rule per run: two rules firing moments apart can expire the fresh token
// a client fetched after the first, which no real token does. The function
// returned counts the requests the rule picked.
func (s *TokenServer) ExpireNext(n int, match func(*http.Request) bool) (fired func() int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.expire)
	s.expire = append(s.expire, expireRule{match: match, left: n})
	return func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.expire[i].fired
	}
}

// forceExpiry reports whether r carries a token ExpireNext made expire.
func (s *TokenServer) forceExpiry(r *http.Request) bool {
	tok := r.Header.Get("Authorization")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revoked[tok] {
		return true
	}
	for i := range s.expire {
		if e := &s.expire[i]; e.left > 0 && e.match(r) {
			e.left--
			e.fired++
			if s.revoked == nil {
				s.revoked = map[string]bool{}
			}
			s.revoked[tok] = true
			return true
		}
	}
	return false
}

// mount serves the token endpoint at tokenPath in front of the registry.
func (s *TokenServer) mount(registry http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == tokenPath {
			s.serve(w, r)
			return
		}
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") && s.forceExpiry(r) {
			s.expired.Add(1)
			scope := ""
			if repo, ok := strings.CutPrefix(r.URL.Path, "/v2/"); ok {
				for _, sep := range []string{"/blobs/", "/manifests/", "/tags/"} {
					if i := strings.Index(repo, sep); i > 0 {
						scope = fmt.Sprintf(",scope=%q", "repository:"+repo[:i]+":pull,push")
					}
				}
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q,service=%q%s,error=\"invalid_token\"", s.realm, s.service, scope))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		registry.ServeHTTP(&challengeWatch{ResponseWriter: w, s: s}, r)
	})
}

// challengeWatch counts the registry's invalid_token challenges.
type challengeWatch struct {
	http.ResponseWriter
	s *TokenServer
}

func (c *challengeWatch) WriteHeader(code int) {
	if code == http.StatusUnauthorized && strings.Contains(c.Header().Get("WWW-Authenticate"), "invalid_token") {
		c.s.expired.Add(1)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *challengeWatch) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *challengeWatch) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Issued is how many tokens the server issued; Refused how many requests it
// refused (bad credentials, wrong service).
func (s *TokenServer) Issued() int64  { return s.issued.Load() }
func (s *TokenServer) Refused() int64 { return s.refusals.Load() }

// Expired is how many requests the registry refused with error="invalid_token"
// (an expired token, mostly): a client that then succeeds refreshed its token.
func (s *TokenServer) Expired() int64 { return s.expired.Load() }

// registryAuth is the `auth: token` section of a registry trusting s.
func (s *TokenServer) registryAuth(realm string) configuration.Parameters {
	s.realm = realm
	return configuration.Parameters{
		"realm": realm, "service": s.service, "issuer": s.issuer, "rootcertbundle": s.bundle,
	}
}

type resourceActions struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

func (s *TokenServer) serve(w http.ResponseWriter, r *http.Request) {
	refuse := func(code int, msg string) {
		s.refusals.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"errors":[{"code":"UNAUTHORIZED","message":%q}]}`, msg)
	}
	if r.Method != http.MethodGet {
		refuse(http.StatusMethodNotAllowed, "GET only")
		return
	}
	q := r.URL.Query()
	if q.Get("service") != s.service {
		refuse(http.StatusBadRequest, "unknown service "+q.Get("service"))
		return
	}
	subject := ""
	var rights *TokenUser
	if u, p, ok := r.BasicAuth(); ok {
		acct, known := s.users[u]
		if !known || acct.Password != p {
			refuse(http.StatusUnauthorized, "invalid username or password")
			return
		}
		subject, rights = u, &acct
	}
	var access []resourceActions
	for _, sc := range q["scope"] {
		for _, one := range strings.Fields(sc) {
			parts := strings.Split(one, ":")
			if len(parts) < 3 {
				continue
			}
			typ, name, wanted := parts[0], strings.Join(parts[1:len(parts)-1], ":"), strings.Split(parts[len(parts)-1], ",")
			var granted []string
			for _, a := range wanted {
				switch {
				case rights == nil: // anonymous: pull only where public
					if s.anonymousPull && typ == "repository" && a == "pull" {
						granted = append(granted, a)
					}
				case typ == "repository" && a == "pull":
					granted = append(granted, a)
				case typ == "repository" && (a == "push" || a == "delete" || a == "*") && rights.Push:
					granted = append(granted, a)
				case typ == "registry" && name == "catalog" && a == "*" && rights.Push:
					granted = append(granted, a)
				}
			}
			if len(granted) > 0 {
				access = append(access, resourceActions{Type: typ, Name: name, Actions: slices.Compact(granted)})
			}
		}
	}
	now := time.Now()
	// Distribution accepts a token until Leeway (60 s, for clock skew) after
	// its exp claim: the claim is set that much earlier so that the token
	// really stops working after TTL.
	ttl := time.Duration(s.ttl.Load())
	exp := now.Add(ttl - disttoken.Leeway).Unix()
	jwt, err := s.sign(map[string]any{
		"iss": s.issuer, "sub": subject, "aud": s.service, "exp": exp, "nbf": now.Unix() - 1, "iat": now.Unix(),
		"jti": fmt.Sprintf("%d-%d", now.UnixNano(), s.issued.Load()), "access": access,
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.issued.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"token": jwt, "access_token": jwt, "expires_in": int(ttl.Seconds()), "issued_at": now.UTC().Format(time.RFC3339),
	})
}

// sign makes a compact ES256 JWS whose x5c header carries the signer's
// certificate (Distribution checks it chains to rootcertbundle).
func (s *TokenServer) sign(claims map[string]any) (string, error) {
	hdr, err := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(s.certDER)}})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(hdr) + "." + enc.EncodeToString(body)
	sum := sha256.Sum256([]byte(signing))
	r, sig, err := ecdsa.Sign(rand.Reader, s.key, sum[:])
	if err != nil {
		return "", err
	}
	raw := make([]byte, 64)
	r.FillBytes(raw[:32])
	sig.FillBytes(raw[32:])
	return signing + "." + enc.EncodeToString(raw), nil
}
