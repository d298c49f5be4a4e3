// Package registrytest runs real CNCF distribution registries on 127.0.0.1 for
// tests, counts the requests they receive, and puts fault-injecting proxies in
// front of them. It also starts the registry matrix's kinds (Kinds, StartKind,
// Matrix; docs/registries.md): Debian's Distribution 2.8 binary, Distribution
// v3 with token auth and a token server of its own, with blob GETs redirected
// to an expiring-URL CDN, over HTTPS with a private CA, with htpasswd; each a
// Target saying how to reach it and inspecting it with go-containerregistry,
// never airlock's client.
//
// Test support only: the binary never links it (internal/depcheck).
package registrytest

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/internal/registryserver"
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

// ignoreMounts drops the mount and from parameters of upload POSTs.
func ignoreMounts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if q := req.URL.Query(); req.Method == http.MethodPost && q.Has("mount") {
			req = req.Clone(req.Context()) // Counts still see the mount asked
			q.Del("mount")
			q.Del("from")
			req.URL.RawQuery = q.Encode()
		}
		next.ServeHTTP(w, req)
	})
}

// Registry is a running embedded registry.
type Registry struct {
	root   string // storage folder (WithFilesystem), else ""
	srv    *httptest.Server
	server *registryserver.Server
	stats  stats
	once   sync.Once
}

// Start runs a registry on 127.0.0.1:0; it is stopped with t.Cleanup.
func Start(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg := registryserver.Config{Users: o.users}
	if o.disk {
		cfg.RootDir = t.TempDir()
	}
	s, err := registryserver.NewServer(cfg)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	r := &Registry{server: s, root: cfg.RootDir}
	h := s.Handler()
	if o.noMounts {
		h = ignoreMounts(h)
	}
	r.srv = httptest.NewUnstartedServer(r.count(h))
	if o.tls {
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.Stop)
	return r
}

// Root returns the storage folder of a WithFilesystem registry ("" in memory).
func (r *Registry) Root() string { return r.root }

// Host returns "127.0.0.1:PORT".
func (r *Registry) Host() string { u, _ := url.Parse(r.srv.URL); return u.Host }

// URL returns the base URL ("http://127.0.0.1:PORT" or https).
func (r *Registry) URL() string { return r.srv.URL }

// Stop shuts the registry down (simulates a registry going away). Safe to call
// more than once.
func (r *Registry) Stop() {
	r.once.Do(func() {
		r.srv.CloseClientConnections()
		r.srv.Close()
		r.server.Close()
	})
}

// CertPool returns a pool trusting the registry's certificate (nil without TLS).
func (r *Registry) CertPool() *x509.CertPool {
	if r.srv.Certificate() == nil {
		return nil
	}
	p := x509.NewCertPool()
	p.AddCert(r.srv.Certificate())
	return p
}

// TLSConfig returns a client TLS configuration trusting the registry.
func (r *Registry) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: r.CertPool(), MinVersion: tls.VersionTLS12}
}

// Counts is a snapshot of the requests a registry served, by kind.
type Counts struct {
	BlobGET, BlobHEAD      int64
	UploadPOST             int64 // upload sessions started (not mounts)
	MountPOST              int64 // mount attempts
	Mounted                int64 // mounts answered 201 Created
	Sessions               int64 // upload POSTs (mounts included) answered 202: sessions opened
	UploadPATCH, UploadPUT int64
	BlobsCommitted         int64 // upload PUTs answered 201 Created
	// ProbeCommitted is the part of BlobsCommitted that was the OCI empty
	// JSON blob ("{}"), which the registry client's mount probe commits
	// once per run and host when the repository it probes lacks it.
	ProbeCommitted            int64
	ProbeBytes                int64 // the part of BytesUploaded sent to commit it
	ManifestGET, ManifestHEAD int64
	ManifestPUT               int64
	BytesUploaded             int64 // request body bytes of PATCH/PUT to uploads
	Other                     int64
	ByPath                    map[string]int64 `json:"-"` // "METHOD kind" → count
	// BlobGETs counts the blob GETs by digest ("sha256:…").
	BlobGETs map[string]int64 `json:"-"`
}

// Committed is BlobsCommitted less the mount probe's blob: the blobs a
// client copied.
func (c Counts) Committed() int64 { return c.BlobsCommitted - c.ProbeCommitted }

// Uploaded is BytesUploaded less the mount probe's: the blob bytes a client
// copied.
func (c Counts) Uploaded() int64 { return c.BytesUploaded - c.ProbeBytes }

type stats struct {
	mu sync.Mutex
	c  Counts
}

// Counts returns a snapshot of the counters.
func (r *Registry) Counts() Counts {
	r.stats.mu.Lock()
	defer r.stats.mu.Unlock()
	c := r.stats.c
	c.ByPath = make(map[string]int64, len(r.stats.c.ByPath))
	for k, v := range r.stats.c.ByPath {
		c.ByPath[k] = v
	}
	c.BlobGETs = maps.Clone(r.stats.c.BlobGETs)
	return c
}

// Reset zeroes the counters.
func (r *Registry) Reset() {
	r.stats.mu.Lock()
	r.stats.c = Counts{}
	r.stats.mu.Unlock()
}

// PathKind classifies a registry API path: "base", "blob", "upload", "manifest",
// "tags", "catalog" or "other".
func PathKind(path string) string {
	p := strings.TrimPrefix(path, "/v2/")
	switch {
	case path == "/v2/" || path == "/v2":
		return "base"
	case p == "_catalog":
		return "catalog"
	case strings.Contains(p, "/blobs/uploads"):
		return "upload"
	case strings.Contains(p, "/blobs/"):
		return "blob"
	case strings.Contains(p, "/manifests/"):
		return "manifest"
	case strings.HasSuffix(p, "/tags/list"):
		return "tags"
	}
	return "other"
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// statusRecorder calls onHeader with the status before the response reaches
// the client, so counters are up to date when the client sees the answer.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	onHeader func(status int)
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status != 0 {
		return
	}
	s.status = code
	s.onHeader(code)
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *Registry) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		kind := PathKind(req.URL.Path)
		var uploaded atomic.Int64
		if kind == "upload" && (req.Method == http.MethodPatch || req.Method == http.MethodPut) && req.Body != nil {
			req.Body = countingBody{req.Body, &uploaded}
		}
		onHeader := func(status int) {
			r.stats.mu.Lock()
			defer r.stats.mu.Unlock()
			c := &r.stats.c
			if c.ByPath == nil {
				c.ByPath = map[string]int64{}
			}
			c.ByPath[req.Method+" "+kind]++
			c.BytesUploaded += uploaded.Load()
			if kind == "upload" && req.URL.Query().Get("digest") == oci.EmptyJSONDigest {
				c.ProbeBytes += uploaded.Load()
			}
			switch kind + " " + req.Method {
			case "blob GET":
				c.BlobGET++
				if c.BlobGETs == nil {
					c.BlobGETs = map[string]int64{}
				}
				c.BlobGETs[req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]]++
			case "blob HEAD":
				c.BlobHEAD++
			case "upload POST":
				if status == http.StatusAccepted {
					c.Sessions++
				}
				if req.URL.Query().Get("mount") != "" {
					c.MountPOST++
					if status == http.StatusCreated {
						c.Mounted++
					}
				} else {
					c.UploadPOST++
				}
			case "upload PATCH":
				c.UploadPATCH++
			case "upload PUT":
				c.UploadPUT++
				if status == http.StatusCreated {
					c.BlobsCommitted++
					if req.URL.Query().Get("digest") == oci.EmptyJSONDigest {
						c.ProbeCommitted++
					}
				}
			case "manifest GET":
				c.ManifestGET++
			case "manifest HEAD":
				c.ManifestHEAD++
			case "manifest PUT":
				c.ManifestPUT++
			default:
				c.Other++
			}
		}
		rec := &statusRecorder{ResponseWriter: w, onHeader: onHeader}
		next.ServeHTTP(rec, req)
		if rec.status == 0 {
			rec.WriteHeader(http.StatusOK)
		}
	})
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
