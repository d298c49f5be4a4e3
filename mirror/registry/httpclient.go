package registry

import (
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// HTTPClient is an HTTP client for servers that follow a registry's
// conventions without being registries (Helm chart repositories): the
// client's TLS settings and certificate folders (certs.d/HOST[:PORT] or
// CertDir), plain HTTP only where the client allows it (loopback, insecure
// hosts, TLS verification off), silence watched, and the credentials the
// auth files (--authfile) hold for the host sent as HTTP basic auth. The
// caller sets each request's deadline.
func (r *Client) HTTPClient() *http.Client {
	return &http.Client{Transport: &basicAuth{inner: r.base, keychain: r.keychain}}
}

type basicAuth struct {
	inner    http.RoundTripper
	keychain authn.Keychain
}

func (b *basicAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return b.inner.RoundTrip(req)
	}
	reg, err := name.NewRegistry(req.URL.Host, name.Insecure)
	if err != nil {
		return b.inner.RoundTrip(req)
	}
	a, err := b.keychain.Resolve(reg)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	cfg, err := a.Authorization()
	if err != nil {
		return nil, err
	}
	if cfg.Username != "" || cfg.Password != "" {
		req = req.Clone(req.Context())
		req.SetBasicAuth(cfg.Username, cfg.Password)
	}
	return b.inner.RoundTrip(req)
}
