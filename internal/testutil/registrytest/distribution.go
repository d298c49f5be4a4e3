package registrytest

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/airlock-mirror/airlock/internal/testutil/registryproc"
)

// distOptions configures startDistribution: a CNCF Distribution v3 registry
// built from its own configuration (handlers.NewApp), with Distribution's own
// access controllers, not airlock's internal/registryserver.
type distOptions struct {
	ca       *CA               // serve HTTPS with a certificate of ca
	htpasswd map[string]string // auth: htpasswd with these users (bcrypt)
	token    *TokenServer      // auth: token, the token endpoint served at /v2/auth of the registry's host
	wrap     func(http.Handler) http.Handler
	sparse   bool // accept sparse indexes (validation.manifests.indexes.platforms: none)
}

type distribution struct {
	host, root string
}

// startDistribution runs a Distribution v3 registry with filesystem storage in
// t.TempDir() and deletes enabled on 127.0.0.1 (in a registry process, as
// Start); it stops with t.Cleanup. With a token server or a wrap, the
// registry's host is a front in this process that serves the token endpoint
// or wraps the registry, and forwards the rest to it.
func startDistribution(t testing.TB, o distOptions) *distribution {
	t.Helper()
	cfg := registryproc.Config{Distribution: true, RootDir: t.TempDir(), Sparse: o.sparse}
	if o.htpasswd != nil {
		var lines []byte
		for u, p := range o.htpasswd {
			h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, u+":"+string(h)+"\n"...)
		}
		cfg.Htpasswd = filepath.Join(t.TempDir(), "htpasswd")
		if err := os.WriteFile(cfg.Htpasswd, lines, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if o.ca != nil {
		cfg.CertPEM, cfg.KeyPEM = o.ca.issuePEM(t)
	}
	if o.token == nil && o.wrap == nil {
		return &distribution{host: hostOf(serve(t, cfg).BaseURL()), root: cfg.RootDir}
	}
	if o.ca != nil {
		t.Fatal("registrytest: a Distribution with a front (token, wrap) speaks plain HTTP")
	}
	// The front's listener first: a token realm names the registry's own URL.
	var handler http.Handler
	front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	if o.token != nil {
		cfg.Token = map[string]string{}
		for k, v := range o.token.registryAuth("http://" + front.Listener.Addr().String() + tokenPath) {
			cfg.Token[k] = fmt.Sprint(v)
		}
	}
	handler = forward(t, serve(t, cfg).BaseURL())
	if o.wrap != nil {
		handler = o.wrap(handler)
	}
	if o.token != nil {
		handler = o.token.mount(handler)
	}
	front.Config.ErrorLog = log.New(io.Discard, "", 0)
	front.Start()
	t.Cleanup(func() {
		front.CloseClientConnections()
		front.Close()
	})
	return &distribution{host: hostOf(front.URL), root: cfg.RootDir}
}

// forward is a reverse proxy to the registry at base (plain HTTP on
// loopback). The Host header stays the front's, so the registry's upload
// locations name the front.
func forward(t testing.TB, base string) http.Handler {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		DisableCompression:    true,
	}
	rp.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(rp.Transport.(*http.Transport).CloseIdleConnections)
	return rp
}

// hostOf is the "127.0.0.1:PORT" of a base URL.
func hostOf(base string) string { u, _ := url.Parse(base); return u.Host }

// issuePEM issues a server certificate (CA.Issue) and returns its chain and
// key in PEM form.
func (c *CA) issuePEM(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	cert := c.Issue(t)
	for _, der := range cert.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})
}
