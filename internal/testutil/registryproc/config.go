package registryproc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"

	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd" // auth: htpasswd
	_ "github.com/distribution/distribution/v3/registry/auth/token"    // auth: token
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"

	"github.com/airlock-mirror/airlock/internal/registryserver"
)

// Config is one test registry. Its zero value is airlock's embedded
// registry (internal/registryserver) in memory over plain HTTP.
type Config struct {
	// RootDir is the storage folder; "" keeps blobs in memory (embedded
	// registry only: Distribution needs a folder).
	RootDir string `json:"rootDir,omitempty"`
	// Users enables the embedded registry's HTTP basic authentication.
	Users map[string]string `json:"users,omitempty"`
	// NoMounts makes the registry ignore cross-repository mounts
	// (IgnoreMounts); the Counter still counts them as mount attempts.
	NoMounts bool `json:"noMounts,omitempty"`
	// SelfSigned serves HTTPS with net/http/httptest's self-signed
	// certificate (what httptest.Server.StartTLS serves).
	SelfSigned bool `json:"selfSigned,omitempty"`
	// CertPEM and KeyPEM serve HTTPS with this certificate chain and key.
	CertPEM []byte `json:"certPEM,omitempty"`
	KeyPEM  []byte `json:"keyPEM,omitempty"`

	// Distribution runs CNCF Distribution v3 from a configuration of its
	// own (handlers.NewApp, its own access controllers) with deletes
	// enabled, instead of the embedded registry. The fields below apply to
	// it only.
	Distribution bool `json:"distribution,omitempty"`
	// Sparse accepts sparse indexes (validation.manifests.indexes.platforms: none).
	Sparse bool `json:"sparse,omitempty"`
	// Htpasswd is the path of an htpasswd file (bcrypt): auth: htpasswd.
	Htpasswd string `json:"htpasswd,omitempty"`
	// Token is the auth: token section (realm, service, issuer, rootcertbundle).
	Token map[string]string `json:"token,omitempty"`
}

// TLS reports whether the registry speaks HTTPS.
func (c Config) TLS() bool { return c.SelfSigned || len(c.CertPEM) > 0 }

// Handler builds the registry c describes, with a Counter in front. close
// releases the registry's background resources.
func Handler(c Config) (h http.Handler, counter *Counter, closeFn func(), err error) {
	if !c.Distribution {
		if c.Htpasswd != "" || c.Token != nil || c.Sparse {
			return nil, nil, nil, fmt.Errorf("registry: htpasswd, token and sparse are options of Distribution (Config.Distribution)")
		}
		s, err := registryserver.NewServer(registryserver.Config{Users: c.Users, RootDir: c.RootDir})
		if err != nil {
			return nil, nil, nil, err
		}
		h, closeFn = s.Handler(), func() { s.Close() }
	} else {
		app, err := distributionApp(c)
		if err != nil {
			return nil, nil, nil, err
		}
		h, closeFn = app, func() { app.Shutdown() }
	}
	if c.NoMounts {
		h = IgnoreMounts(h)
	}
	counter = &Counter{}
	return counter.Wrap(h), counter, closeFn, nil
}

// distributionApp is a Distribution v3 registry with filesystem storage in
// c.RootDir, deletes enabled, the access controller c names.
func distributionApp(c Config) (*handlers.App, error) {
	if c.RootDir == "" {
		return nil, fmt.Errorf("registry: Distribution needs a storage folder (Config.RootDir)")
	}
	if len(c.Users) > 0 {
		return nil, fmt.Errorf("registry: Distribution authenticates with Config.Htpasswd or Config.Token, not Users")
	}
	conf := &configuration.Configuration{}
	conf.Log.AccessLog.Disabled = true
	conf.Log.Level = "error"
	conf.Storage = configuration.Storage{
		"filesystem":  configuration.Parameters{"rootdirectory": c.RootDir},
		"delete":      configuration.Parameters{"enabled": true},
		"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
	}
	conf.Catalog.MaxEntries = 1000
	if c.Sparse {
		conf.Validation.Manifests.Indexes.Platforms = "none"
	}
	conf.HTTP.Secret = fmt.Sprintf("registrytest-%d", time.Now().UnixNano())
	switch {
	case c.Htpasswd != "" && c.Token != nil:
		return nil, fmt.Errorf("registry: Htpasswd and Token both set: Distribution takes one access controller")
	case c.Htpasswd != "":
		conf.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "airlock-test", "path": c.Htpasswd}}
	case c.Token != nil:
		p := configuration.Parameters{}
		for k, v := range c.Token {
			p[k] = v
		}
		conf.Auth = configuration.Auth{"token": p}
	}
	quiet.Do(func() { logrus.SetOutput(io.Discard) })
	var app *handlers.App
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil { // Distribution panics on a bad configuration
				err = fmt.Errorf("registry: distribution configuration: %v", r)
			}
		}()
		app = handlers.NewApp(context.Background(), conf)
		return nil
	}()
	return app, err
}

// quiet silences Distribution's logrus output (errors reach the tests as HTTP
// answers).
var quiet sync.Once
