package registryproc

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"sync"
)

// Env is the environment variable that chooses where Run serves registries:
// "inprocess" serves them in the test process (under the race detector when
// the tests run with it: slower, but one process to debug); anything else
// in registry processes.
const Env = "AIRLOCK_TEST_REGISTRY"

// InProcess reports whether Run serves registries in the test process ($Env).
func InProcess() bool { return os.Getenv(Env) == "inprocess" }

// Registry is a running test registry, in a registry process (Proc) or in
// this one (Server).
type Registry interface {
	// BaseURL is "http://127.0.0.1:PORT" or https.
	BaseURL() string
	// Certificate is what an HTTPS registry serves (nil over plain HTTP).
	Certificate() *x509.Certificate
	// Counts returns the request counts; Reset zeroes them.
	Counts() (Counts, error)
	Reset() error
	// Stop stops the registry at once (its connections drop); the counts
	// stay readable. Safe to call more than once.
	Stop()
}

// Run serves the registry c describes on 127.0.0.1:0: in a registry process
// (Start), or in this process when InProcess.
func Run(c Config) (Registry, error) {
	if InProcess() {
		return Serve(c)
	}
	return Start(c)
}

// Server is a registry served in this process.
type Server struct {
	srv     *httptest.Server
	counter *Counter
	closeFn func()
	once    sync.Once
}

// Serve serves the registry c describes in this process on 127.0.0.1:0.
func Serve(c Config) (*Server, error) {
	h, counter, closeFn, err := Handler(c)
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(h)
	// Clients refusing the certificate (the tests that check they do) are no news.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	switch {
	case len(c.CertPEM) > 0:
		cert, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
		if err != nil {
			srv.Close()
			closeFn()
			return nil, fmt.Errorf("registry: TLS certificate and key: %w", err)
		}
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		srv.StartTLS()
	case c.SelfSigned:
		srv.StartTLS()
	default:
		srv.Start()
	}
	return &Server{srv: srv, counter: counter, closeFn: closeFn}, nil
}

// BaseURL is "http://127.0.0.1:PORT" or https.
func (s *Server) BaseURL() string { return s.srv.URL }

// Certificate is what an HTTPS registry serves (nil over plain HTTP).
func (s *Server) Certificate() *x509.Certificate {
	if s.srv.TLS == nil {
		return nil
	}
	return s.srv.Certificate()
}

// Counts returns the request counts.
func (s *Server) Counts() (Counts, error) { return s.counter.Counts(), nil }

// Reset zeroes the request counts.
func (s *Server) Reset() error { s.counter.Reset(); return nil }

// Stop closes the registry's connections and stops it.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
		s.closeFn()
	})
}
