package mirror

import (
	"crypto/tls"
	"log/slog"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// NewFetchOptions returns the options FetchCatalogWithOptions needs to read a
// catalog from a registry: credentials from authFile (--authfile; empty means the
// default lookup of AuthKeychain) and, when tlsVerify is false
// (--src-tls-verify=false), no certificate verification and plain HTTP allowed.
//
// It serves the commands that only read catalogs (list operators); the mirror
// workflow builds its registry access from RegistryOptions.
func NewFetchOptions(authFile string, tlsVerify bool, log *slog.Logger) FetchOptions {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if !tlsVerify {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // the user asked for --src-tls-verify=false
	}
	policy := RetryPolicy{Times: defaultRetryTimes}.withDefaults()
	rt := &retryTransport{inner: tr, policy: policy}
	return FetchOptions{
		Retry:    policy,
		Registry: NewRegistry(RegistryOptions{AuthFile: authFile, SkipTLSVerify: !tlsVerify, Logger: log}),
		Remote: []remote.Option{
			remote.WithAuthFromKeychain(AuthKeychain(authFile)),
			remote.WithTransport(rt),
			remote.WithUserAgent("airlock"),
		},
		Insecure: !tlsVerify,
		Logger:   log,
	}
}
