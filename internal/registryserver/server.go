// Package registryserver runs an embedded CNCF distribution registry (the same code
// as the docker "registry" image) in process: in-memory or filesystem storage,
// optional TLS and optional HTTP basic authentication. It backs the test fixtures of
// internal/testutil/registrytest and `airlock registry serve`. It never uses airlock's
// own registry client, so that tests copying through that client meet a server it
// did not write.
package registryserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/api/errcode"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem" // storage driver
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"   // storage driver
	"github.com/sirupsen/logrus"
)

// Config configures an embedded registry.
type Config struct {
	// Addr is the listen address for Serve, e.g. "127.0.0.1:5000" (default
	// "127.0.0.1:5000").
	Addr string
	// RootDir is the storage directory. Empty means in-memory storage (lost when
	// the process exits).
	RootDir string
	// TLSCertFile and TLSKeyFile enable HTTPS when both are set. TLSConfig, when
	// non-nil, is used as is (and takes precedence).
	TLSCertFile, TLSKeyFile string
	TLSConfig               *tls.Config
	// Users enables HTTP basic authentication: user name → password. Empty means
	// anonymous read and write.
	Users map[string]string
	// Htpasswd is the path of an htpasswd file of bcrypt entries (htpasswd -B);
	// it enables HTTP basic authentication against its users (in addition to
	// Users).
	Htpasswd string
	// Ready, when set, is called once Serve or ServeListener listens, with the
	// base URL clients use ("http://127.0.0.1:5000").
	Ready func(url string)
	// ReadOnly rejects every write (push, delete).
	ReadOnly bool
	// Logger receives the registry's own log lines at warning level and above,
	// and one line per request at debug level; nil discards them.
	Logger *slog.Logger
}

// Server is an embedded registry.
type Server struct {
	cfg     Config
	app     *handlers.App
	handler http.Handler
}

var logrusMu sync.Mutex

// NewServer builds the registry application. Nothing listens until Serve.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:5000"
	}
	quietDistribution(cfg.Logger)
	conf := &configuration.Configuration{}
	conf.Log.AccessLog.Disabled = true
	conf.Log.Level = "error"
	maintenance := configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}}
	if cfg.ReadOnly {
		maintenance["readonly"] = map[any]any{"enabled": true}
	}
	if cfg.RootDir == "" {
		conf.Storage = configuration.Storage{"inmemory": configuration.Parameters{}, "maintenance": maintenance}
	} else {
		conf.Storage = configuration.Storage{
			"filesystem":  configuration.Parameters{"rootdirectory": cfg.RootDir},
			"maintenance": maintenance,
		}
	}
	// Deletes are on: airlock delete removes manifests, airlock registry gc
	// frees their blobs.
	conf.Storage["delete"] = configuration.Parameters{"enabled": true}
	// The default of the registry's own configuration loader (a Configuration
	// built by hand has 0, and /v2/_catalog then lists nothing).
	conf.Catalog.MaxEntries = 1000
	// Sparse indexes are accepted (an index some of whose children are not
	// here): what a platform subset (platforms: in the configuration) pushes,
	// keeping the index's digest. oc-mirror's cache registry does the same.
	conf.Validation.Manifests.Indexes.Platforms = "none"
	// A fixed secret per server keeps upload state valid across handler instances.
	conf.HTTP.Secret = fmt.Sprintf("airlock-%d", time.Now().UnixNano())
	var app *handlers.App
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil { // distribution panics on bad configuration
				err = fmt.Errorf("registry configuration: %v", r)
			}
		}()
		app = handlers.NewApp(context.Background(), conf)
		return nil
	}()
	if err != nil {
		return nil, fmt.Errorf("start embedded registry (storage %q): %w", cfg.RootDir, err)
	}
	s := &Server{cfg: cfg, app: app}
	s.handler = app
	check, err := cfg.authenticator()
	if err != nil {
		app.Shutdown()
		return nil, err
	}
	if check != nil {
		s.handler = basicAuth(check, app)
	}
	if cfg.Logger != nil {
		s.handler = accessLog(cfg.Logger, s.handler)
	}
	return s, nil
}

// Handler returns the registry's HTTP handler (the /v2/ API).
func (s *Server) Handler() http.Handler { return s.handler }

// Close releases the registry's background resources.
func (s *Server) Close() error { return s.app.Shutdown() }

// Serve listens on Config.Addr and serves until ctx is done, then shuts down
// gracefully (in-flight requests get 5 seconds).
func (s *Server) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	return s.ServeListener(ctx, ln)
}

// ServeListener serves on ln until ctx is done.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 30 * time.Second}
	if s.cfg.Logger != nil {
		// TLS handshake failures and the like are the clients' problems.
		srv.ErrorLog = slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug)
	}
	tlsOn := false
	switch {
	case s.cfg.TLSConfig != nil:
		srv.TLSConfig = s.cfg.TLSConfig
		tlsOn = true
	case s.cfg.TLSCertFile != "" && s.cfg.TLSKeyFile != "":
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
		if err != nil {
			ln.Close()
			return fmt.Errorf("load TLS certificate %s / key %s: %w", s.cfg.TLSCertFile, s.cfg.TLSKeyFile, err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		tlsOn = true
	}
	url := baseURL(ln.Addr(), tlsOn)
	if s.cfg.Logger != nil && exposed(ln.Addr()) && !tlsOn && len(s.cfg.Users) == 0 && s.cfg.Htpasswd == "" {
		s.cfg.Logger.Warn("the registry listens on a non-loopback address over plain HTTP without authentication: anyone who can reach it can read and write images; use --tls-cert/--tls-key and --htpasswd, or a 127.0.0.1 address", "url", url)
	}
	if s.cfg.RootDir != "" {
		// GarbageCollect refuses to sweep a storage a registry is serving.
		if err := markServing(s.cfg.RootDir, ln.Addr().String()); err != nil {
			ln.Close()
			return err
		}
		defer os.Remove(filepath.Join(s.cfg.RootDir, ServingFile))
	}
	if s.cfg.Ready != nil {
		s.cfg.Ready(url)
	}
	errc := make(chan error, 1)
	go func() {
		if tlsOn {
			errc <- srv.Serve(tls.NewListener(ln, srv.TLSConfig))
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	// Requests in flight get 5 seconds to finish; then the connections still
	// open are closed. (A client may hold a connection it dialled but never
	// used: net/http waits 5 seconds before it counts such a connection as idle,
	// so a graceful shutdown alone can run out of time on it.)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	s.Close()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func basicAuth(check func(user, password string) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); ok && check(u, p) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="airlock-registry"`)
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
	})
}

// quietDistribution routes distribution's logrus output (a process-wide logger) to
// logger at warning level and above, or discards it.
func quietDistribution(logger *slog.Logger) {
	logrusMu.Lock()
	defer logrusMu.Unlock()
	logrus.SetOutput(io.Discard)
	logrus.SetLevel(logrus.WarnLevel)
	if logger != nil {
		logrus.StandardLogger().ReplaceHooks(logrus.LevelHooks{})
		logrus.AddHook(slogHook{logger})
	}
}

type slogHook struct{ l *slog.Logger }

func (slogHook) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel, logrus.WarnLevel}
}

func (h slogHook) Fire(e *logrus.Entry) error {
	lvl := slog.LevelWarn
	if e.Level <= logrus.ErrorLevel {
		lvl = slog.LevelError
	}
	var attrs []any
	// Error responses (manifest unknown, unauthorized…) are logged by
	// distribution at error level; only 5xx are errors of the registry itself.
	if code, ok := e.Data["err.code"].(errcode.ErrorCode); ok {
		status := code.Descriptor().HTTPStatusCode
		if st, ok := e.Data["http.response.status"].(int); ok && st > 0 {
			status = st
		}
		if status > 0 && status < 500 {
			lvl = slog.LevelDebug
		}
		attrs = append(attrs, "code", code.String(), "status", status)
		if m, ok := e.Data["err.message"]; ok {
			attrs = append(attrs, "message", fmt.Sprint(m))
		}
		if p, ok := e.Data["http.request.uri"]; ok {
			attrs = append(attrs, "uri", fmt.Sprint(p))
		}
	}
	if strings.HasPrefix(e.Message, "Image index completeness validation has been disabled") {
		lvl = slog.LevelDebug // on purpose: sparse indexes are accepted (NewServer)
	}
	h.l.Log(context.Background(), lvl, "registry: "+e.Message, attrs...)
	return nil
}
