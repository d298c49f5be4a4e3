package registrytest

import "testing"

// UntrustedKinds name the registries Untrusted starts: what a client that
// verifies TLS (airlock's zero options) must refuse. Plain HTTP to a
// registry that is not on a loopback address is refused by the registry
// client's scheme guard, tested in mirror/registry without a network (tests
// here never send traffic to any address but loopback).
var UntrustedKinds = []string{"self-signed"}

// Untrusted starts a registry of kind (one of UntrustedKinds): HTTPS with a
// self-signed certificate. It returns the registry (for pushing with
// TLSConfig) and the host to reach it at.
func Untrusted(t testing.TB, kind string) (*Registry, string) {
	t.Helper()
	switch kind {
	case "self-signed":
		r := Start(t, WithTLS())
		return r, r.Host()
	}
	t.Fatalf("registrytest: unknown untrusted kind %q (want one of %v)", kind, UntrustedKinds)
	return nil, ""
}
