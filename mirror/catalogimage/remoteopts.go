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
	return fetchOptions(authFile, tlsVerify, retry, log, nil)
}

// SourceFetchOptions is NewFetchOptions reading catalogs through the
// registries.conf a mirror run reads ($CONTAINERS_REGISTRIES_CONF, else the
// system files: see registry.LoadRegistriesConf), for the commands that read
// catalogs without mirroring them.
func SourceFetchOptions(authFile string, tlsVerify bool, log *slog.Logger) (FetchOptions, error) {
	conf, err := registry.LoadRegistriesConf("")
	if err != nil {
		return FetchOptions{}, err
	}
	return fetchOptions(authFile, tlsVerify, nil, log, conf), nil
}

func fetchOptions(authFile string, tlsVerify bool, retry *retry.Policy, log *slog.Logger, conf *registry.RegistriesConf) FetchOptions {
	return FetchOptions{
		Registry: registry.New(registry.Options{AuthFile: authFile, SkipTLSVerify: !tlsVerify, TLSFlag: "--src-tls-verify=false", Retry: retry, Logger: log, Sources: conf}),
		Logger:   log,
	}
}
