// Package redact finds credentials written into an image reference or a URL
// ("docker://user:password@host/ns", "user:pw@quay.io/ns/app:1") and hides them,
// so that no error, log line, lock record or report ever prints a password. It is
// a leaf: the configuration (imageset), the references (mirror/oci) and the
// workspace records all use this one implementation. It must not know how
// references are parsed beyond "user[:password]@" before the host.
package redact

import (
	"regexp"
	"strings"
)

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

// secretPatterns find credentials anywhere in a text: user:password@ after a
// scheme, authorization header values, and password, token or secret fields
// (key=value, key: value, "key":"value").
var secretPatterns = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(://)[^/\s@:]+:[^/\s@]*@`), "${1}***@"},
	{regexp.MustCompile(`(?i)\b((?:proxy-)?authorization|www-authenticate)(["']?\s*[:=]\s*["']?)(?:bearer|basic)?\s*[^\s"',;]+`), "${1}${2}***"},
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), "${1} ***"},
	{regexp.MustCompile(`(?i)\b("?(?:password|passwd|token|access_token|refresh_token|secret|auth|identitytoken|registrytoken)"?\s*[:=]\s*"?)[^\s",}]+`), "${1}***"},
}

// Text returns s with every credential it finds hidden (see secretPatterns):
// for text that leaves the process, such as a log file.
func Text(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.with)
	}
	return s
}
