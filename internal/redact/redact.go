// Package redact finds credentials written into an image reference or a URL
// ("docker://user:password@host/ns", "user:pw@quay.io/ns/app:1") and hides them,
// so that no error, log line, lock record or report ever prints a password. It is
// a leaf: the configuration (imageset), the references (mirror/oci) and the
// workspace records all use this one implementation. It must not know how
// references are parsed beyond "user[:password]@" before the host.
package redact

import "strings"

// Credentials returns s with any "user[:password]@" in its first path component
// (after an optional transport prefix such as docker://) replaced by "***@",
// and whether there was one. "name@sha256:…" is a digest, not credentials.
func Credentials(s string) (string, bool) {
	prefix, rest := "", s
	if i := strings.Index(rest, "://"); i >= 0 {
		prefix, rest = rest[:i+3], rest[i+3:]
	}
	first := rest
	if i := strings.IndexByte(first, '/'); i >= 0 {
		first = first[:i]
	}
	at := strings.LastIndexByte(first, '@')
	if at < 0 {
		return s, false
	}
	if after := first[at+1:]; strings.HasPrefix(after, "sha256:") || strings.HasPrefix(after, "sha512:") {
		return s, false
	}
	return prefix + "***" + rest[at:], true
}

// Host is the host of a reference Credentials redacted (what follows "@", up
// to the first "/"), for hints such as "podman login HOST".
func Host(redacted string) string {
	host := redacted[strings.LastIndex(redacted, "@")+1:]
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	return host
}
