package registrytest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// CDN is a second host that serves a registry's blobs from expiring signed URLs,
// as quay.io does (its blob GETs answer 307 to a storage host with a pre-signed
// URL). The registry in front answers every GET of an existing blob with a 307
// to the CDN; the CDN refuses a URL whose signature does not match, that has
// expired, or a request that carries an Authorization header (as S3 does for a
// pre-signed URL), and otherwise serves the blob (Range requests included).
type CDN struct {
	base   string // "http://127.0.0.1:PORT"
	origin http.Handler
	secret []byte
	ttl    time.Duration
	store  *blobStore // nil: the registry is asked (origin)

	redirects, served, refused atomic.Int64
}

// newCDN starts the CDN host; Front must wrap the registry handler that holds
// the blobs.
func newCDN(t testing.TB, ttl time.Duration) *CDN {
	t.Helper()
	c := newCDNHandler(ttl)
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	c.base = srv.URL
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return c
}

// newCDNHandler makes a CDN whose server the caller starts (serving c.serve)
// and whose base URL it then sets.
func newCDNHandler(ttl time.Duration) *CDN {
	c := &CDN{secret: make([]byte, 32), ttl: ttl}
	rand.Read(c.secret)
	return c
}

// Host returns the CDN's "127.0.0.1:PORT".
func (c *CDN) Host() string { u, _ := url.Parse(c.base); return u.Host }

// Redirects counts the 307s the registry answered; Served the blob GETs the
// CDN answered; Refused those it refused (expired, tampered, with credentials).
func (c *CDN) Redirects() int64 { return c.redirects.Load() }
func (c *CDN) Served() int64    { return c.served.Load() }
func (c *CDN) Refused() int64   { return c.refused.Load() }

// SignedURL returns the CDN URL of blob dgst of repository repo valid until
// expires (tests make expired or tampered ones from it).
func (c *CDN) SignedURL(repo, dgst string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	q := url.Values{"repo": {repo}, "expires": {exp}, "signature": {c.sign(repo, dgst, exp)}}
	return c.base + "/blobs/" + dgst + "?" + q.Encode()
}

func (c *CDN) sign(repo, dgst, exp string) string {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(repo + "\n" + dgst + "\n" + exp))
	return hex.EncodeToString(m.Sum(nil))
}

// front wraps origin (the registry): a GET of a blob the registry has is
// answered with a 307 to a signed CDN URL; everything else goes to origin.
func (c *CDN) front(origin http.Handler) http.Handler {
	c.origin = origin
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo, dgst, ok := blobPath(r.URL.Path)
		if !ok || r.Method != http.MethodGet {
			origin.ServeHTTP(w, r)
			return
		}
		if c.store != nil {
			if !c.store.linked(repo, dgst) {
				origin.ServeHTTP(w, r)
				return
			}
			c.redirects.Add(1)
			http.Redirect(w, r, c.SignedURL(repo, dgst, time.Now().Add(c.ttl)), http.StatusTemporaryRedirect)
			return
		}
		head := r.Clone(r.Context())
		head.Method = http.MethodHead
		rec := httptest.NewRecorder()
		origin.ServeHTTP(rec, head)
		if rec.Code != http.StatusOK {
			origin.ServeHTTP(w, r)
			return
		}
		c.redirects.Add(1)
		http.Redirect(w, r, c.SignedURL(repo, dgst, time.Now().Add(c.ttl)), http.StatusTemporaryRedirect)
	})
}

// blobPath splits /v2/NAME/blobs/DIGEST.
func blobPath(p string) (repo, dgst string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(rest, "/blobs/")
	if i <= 0 || strings.Contains(rest[i+len("/blobs/"):], "/") {
		return "", "", false
	}
	return rest[:i], rest[i+len("/blobs/"):], true
}

func (c *CDN) serve(w http.ResponseWriter, r *http.Request) {
	refuse := func(code int, msg string) {
		c.refused.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(code)
		w.Write([]byte("<Error><Message>" + msg + "</Message></Error>"))
	}
	dgst, ok := strings.CutPrefix(r.URL.Path, "/blobs/")
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		refuse(http.StatusNotFound, "no such object")
		return
	}
	if r.Header.Get("Authorization") != "" {
		refuse(http.StatusBadRequest, "Only one auth mechanism allowed")
		return
	}
	q := r.URL.Query()
	repo, exp, sig := q.Get("repo"), q.Get("expires"), q.Get("signature")
	if !hmac.Equal([]byte(sig), []byte(c.sign(repo, dgst, exp))) {
		refuse(http.StatusForbidden, "SignatureDoesNotMatch")
		return
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || time.Now().Unix() > e {
		refuse(http.StatusForbidden, "Request has expired")
		return
	}
	c.served.Add(1)
	if c.store != nil && c.store.serve(w, r, dgst) {
		return
	}
	req := httptest.NewRequest(r.Method, "/v2/"+repo+"/blobs/"+dgst, nil).WithContext(r.Context())
	if rg := r.Header.Get("Range"); rg != "" {
		req.Header.Set("Range", rg)
	}
	c.origin.ServeHTTP(w, req)
}
