// Package registrytest runs real CNCF distribution registries on 127.0.0.1 for
// tests, counts the requests they receive, and puts fault-injecting proxies in
// front of them. It also starts the registry matrix's kinds (Kinds, StartKind,
// Matrix; docs/registries.md): Debian's Distribution 2.8 binary, Distribution
// v3 with token auth and a token server of its own, with blob GETs redirected
// to an expiring-URL CDN, over HTTPS with a private CA, with htpasswd; each a
// Target saying how to reach it and inspecting it with go-containerregistry,
// never airlock's client.
//
// The registries run in registry processes built without the race detector
// (internal/testutil/registryproc), so that their CPU does not pay for it;
// what the tests observe (request counts, fault proxies, token and CDN
// fronts) stays in the test process. $AIRLOCK_TEST_REGISTRY=inprocess serves
// them in the test process instead, for debugging.
//
// Test support only: the binary never links it (internal/depcheck).
package registrytest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registryproc"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Option configures Start.
type Option func(*options)

type options struct {
	tls      bool
	users    map[string]string
	disk     bool
	noMounts bool
}

// WithTLS serves HTTPS with a self-signed certificate; use Registry.CertPool or
// Registry.Client to trust it.
func WithTLS() Option { return func(o *options) { o.tls = true } }

// WithBasicAuth requires HTTP basic authentication with user / password.
func WithBasicAuth(user, password string) Option {
	return func(o *options) {
		if o.users == nil {
			o.users = map[string]string{}
		}
		o.users[user] = password
	}
}

// WithFilesystem stores blobs under t.TempDir() instead of in memory.
func WithFilesystem() Option { return func(o *options) { o.disk = true } }

// WithoutMounts makes the registry ignore cross-repository mounts, as some
// registries do: a mount request opens an upload session (202) instead of
// mounting. Counts still count it as a mount attempt (MountPOST).
func WithoutMounts() Option { return func(o *options) { o.noMounts = true } }

// Counts is a snapshot of the requests a registry served, by kind.
type Counts = registryproc.Counts

// PathKind classifies a registry API path: "base", "blob", "upload", "manifest",
// "tags", "catalog" or "other".
func PathKind(path string) string { return oci.APIPathKind(path) }

// Registry is a running embedded registry.
type Registry struct {
	t    testing.TB
	root string // storage folder (WithFilesystem), else ""
	srv  registryproc.Registry
}

// Start runs a registry on 127.0.0.1:0; it is stopped with t.Cleanup. It is
// airlock's embedded registry (internal/registryserver), served by a registry
// process built without the race detector (registryproc; $AIRLOCK_TEST_REGISTRY
// set to "inprocess" serves it in the test process instead).
func Start(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg := registryproc.Config{Users: o.users, SelfSigned: o.tls, NoMounts: o.noMounts}
	if o.disk {
		cfg.RootDir = t.TempDir()
	}
	return &Registry{t: t, root: cfg.RootDir, srv: serve(t, cfg)}
}

// Root returns the storage folder of a WithFilesystem registry ("" in memory).
func (r *Registry) Root() string { return r.root }

// Host returns "127.0.0.1:PORT".
func (r *Registry) Host() string { return hostOf(r.srv.BaseURL()) }

// URL returns the base URL ("http://127.0.0.1:PORT" or https).
func (r *Registry) URL() string { return r.srv.BaseURL() }

// Stop shuts the registry down (simulates a registry going away). Safe to call
// more than once.
func (r *Registry) Stop() { r.srv.Stop() }

// CertPool returns a pool trusting the registry's certificate (nil without TLS).
func (r *Registry) CertPool() *x509.CertPool {
	cert := r.srv.Certificate()
	if cert == nil {
		return nil
	}
	p := x509.NewCertPool()
	p.AddCert(cert)
	return p
}

// TLSConfig returns a client TLS configuration trusting the registry.
func (r *Registry) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: r.CertPool(), MinVersion: tls.VersionTLS12}
}

// Counts returns a snapshot of the counters.
func (r *Registry) Counts() Counts {
	c, err := r.srv.Counts()
	if err != nil {
		r.t.Errorf("registrytest: counts of %s: %v", r.Host(), err)
	}
	return c
}

// Reset zeroes the counters.
func (r *Registry) Reset() {
	if err := r.srv.Reset(); err != nil {
		r.t.Errorf("registrytest: reset the counts of %s: %v", r.Host(), err)
	}
}

// serve runs the registry cfg describes (registryproc.Run), stopped with
// t.Cleanup.
func serve(t testing.TB, cfg registryproc.Config) registryproc.Registry {
	t.Helper()
	r, err := registryproc.Run(cfg)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	t.Cleanup(r.Stop)
	return r
}

// ClosedAddr returns a loopback "127.0.0.1:PORT" nothing listens on (a registry
// that is down).
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
