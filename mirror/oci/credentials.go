package oci

import (
	"fmt"
	"strings"
)

// RefuseCredentials returns an error when s, an image reference or a
// destination ("docker://user:password@host/ns"), carries credentials before
// its host. The error shows the reference with the credentials replaced by
// "***" and says where credentials go instead; s is never quoted as given.
func RefuseCredentials(s string) error {
	red, ok := redactUserinfo(s)
	if !ok {
		return nil
	}
	host := red[strings.LastIndex(red, "@")+1:]
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	return fmt.Errorf("%w %s: credentials in a reference are not supported (they would be kept in shell history, logs and reports): remove them and log in instead (podman login %s, or podman login --authfile FILE %s then --authfile FILE)", ErrInvalidReference, red, host, host)
}

// RedactCredentials returns s with any "user[:password]@" before the host
// replaced by "***@".
func RedactCredentials(s string) string {
	red, _ := redactUserinfo(s)
	return red
}

// redactUserinfo finds "user[:password]@" in the first path component of s
// (after an optional transport prefix such as "docker://").
func redactUserinfo(s string) (string, bool) {
	prefix := ""
	rest := s
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
	// "name@sha256:…" without a slash is a digest reference, not credentials.
	if strings.HasPrefix(first[at+1:], "sha256:") || strings.HasPrefix(first[at+1:], "sha512:") {
		return s, false
	}
	return prefix + "***" + rest[at:], true
}
