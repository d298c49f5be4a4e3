package catalogimage

import (
	"log/slog"

	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// NewFetchOptions returns the options Fetch needs to read a
// catalog from a registry: credentials from authFile (--authfile; empty means the
// default lookup of registry.AuthKeychain), TLS verified unless tlsVerify is false
// (--src-tls-verify=false, which also allows plain HTTP), and retry the retry
// policy (nil: retry.DefaultTimes).
func NewFetchOptions(authFile string, tlsVerify bool, retry *retry.Policy, log *slog.Logger) FetchOptions {
	return FetchOptions{
		Registry: registry.New(registry.Options{AuthFile: authFile, SkipTLSVerify: !tlsVerify, TLSFlag: "--src-tls-verify=false", Retry: retry, Logger: log}),
		Logger:   log,
	}
}
