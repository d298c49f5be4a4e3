package registrytest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"

	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd" // auth: htpasswd
	_ "github.com/distribution/distribution/v3/registry/auth/token"    // auth: token
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
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
	srv  *httptest.Server
	root string
	app  *handlers.App
}

func (d *distribution) host() string { u, _ := url.Parse(d.srv.URL); return u.Host }

// startDistribution runs a Distribution v3 registry with filesystem storage in
// t.TempDir() and deletes enabled on 127.0.0.1; it stops with t.Cleanup.
func startDistribution(t testing.TB, o distOptions) *distribution {
	t.Helper()
	root := t.TempDir()
	// The listener first: a token realm names the registry's own URL.
	var handler http.Handler
	d := &distribution{srv: httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) })), root: root}
	base := "http://" + d.srv.Listener.Addr().String()
	if o.ca != nil {
		base = "https://" + d.srv.Listener.Addr().String()
	}
	conf := &configuration.Configuration{}
	conf.Log.AccessLog.Disabled = true
	conf.Log.Level = "error"
	conf.Storage = configuration.Storage{
		"filesystem":  configuration.Parameters{"rootdirectory": root},
		"delete":      configuration.Parameters{"enabled": true},
		"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
	}
	conf.Catalog.MaxEntries = 1000
	if o.sparse {
		conf.Validation.Manifests.Indexes.Platforms = "none"
	}
	conf.HTTP.Secret = fmt.Sprintf("registrytest-%d", time.Now().UnixNano())
	switch {
	case o.htpasswd != nil:
		var lines []byte
		for u, p := range o.htpasswd {
			h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, u+":"+string(h)+"\n"...)
		}
		path := filepath.Join(t.TempDir(), "htpasswd")
		if err := os.WriteFile(path, lines, 0o600); err != nil {
			t.Fatal(err)
		}
		conf.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "airlock-test", "path": path}}
	case o.token != nil:
		conf.Auth = configuration.Auth{"token": o.token.registryAuth(base + tokenPath)}
	}
	quiet.Do(func() { logrus.SetOutput(io.Discard) })
	var app *handlers.App
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("registrytest: distribution configuration: %v", r)
			}
		}()
		app = handlers.NewApp(context.Background(), conf)
	}()
	d.app = app
	// Clients refusing the certificate (the tests that check they do) are no news.
	d.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	handler = app
	if o.wrap != nil {
		handler = o.wrap(handler)
	}
	if o.token != nil {
		handler = o.token.mount(handler)
	}
	if o.ca != nil {
		d.srv.TLS = &tls.Config{Certificates: []tls.Certificate{o.ca.Issue(t)}, MinVersion: tls.VersionTLS12}
		d.srv.StartTLS()
	} else {
		d.srv.Start()
	}
	t.Cleanup(func() {
		d.srv.CloseClientConnections()
		d.srv.Close()
		app.Shutdown()
	})
	return d
}

// quiet silences Distribution's logrus output (errors reach the tests as HTTP
// answers).
var quiet sync.Once
