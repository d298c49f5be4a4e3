package oci

import (
	"strings"

	"github.com/opencontainers/go-digest"
)

// parsePlain parses the references catalogs and releases name nearly always,
// REGISTRY/PATH@sha256:HEX or REGISTRY/PATH:TAG with an explicit registry (its
// first component holds a "."), without distribution/reference's regular
// expressions (at 5,000 images they were a tenth of a no-op re-run's planning).
// It reports false for anything else, which ParseReference then parses the
// general way; when it reports true the result is the one the general way gives.
func parsePlain(s string) (Reference, bool) {
	name, dg, hasDigest := strings.Cut(s, "@")
	if hasDigest && !plainSHA256(dg) {
		return Reference{}, false
	}
	slash := strings.IndexByte(name, '/')
	if slash <= 0 {
		return Reference{}, false
	}
	host := name[:slash]
	if !strings.Contains(host, ".") || host == "docker.io" || host == "index.docker.io" || !plainHost(host) {
		return Reference{}, false
	}
	path, tag := name[slash+1:], ""
	if i := strings.LastIndexByte(path, ':'); i >= 0 {
		path, tag = path[:i], path[i+1:]
		if !plainTag(tag) {
			return Reference{}, false
		}
	}
	if hasDigest && tag != "" || len(host)+1+len(path) > 255 || !plainPath(path) {
		return Reference{}, false
	}
	r := Reference{Registry: host, Path: path, Tag: tag, Digest: digest.Digest(dg)}
	if !hasDigest && tag == "" {
		r.Tag, r.DefaultedTag = "latest", true
	}
	return r, true
}

// plainHost: lower-case DNS labels (letters, digits, inner "-") joined by ".",
// with an optional numeric port.
func plainHost(h string) bool {
	if i := strings.IndexByte(h, ':'); i >= 0 {
		port := h[i+1:]
		if port == "" || !allBytes(port, isDigit) {
			return false
		}
		h = h[:i]
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		if !allBytes(label, func(c byte) bool { return isLowerAlnum(c) || c == '-' }) {
			return false
		}
	}
	return true
}

// plainPath: components of lower-case letters and digits joined by ".", "_",
// "__" or any number of "-", the components joined by "/".
func plainPath(p string) bool {
	for comp := range strings.SplitSeq(p, "/") {
		if comp == "" || !isLowerAlnum(comp[0]) || !isLowerAlnum(comp[len(comp)-1]) {
			return false
		}
		for i := 0; i < len(comp); {
			if isLowerAlnum(comp[i]) {
				i++
				continue
			}
			j := i
			for j < len(comp) && !isLowerAlnum(comp[j]) {
				j++
			}
			if sep := comp[i:j]; sep != "." && sep != "_" && sep != "__" && strings.Trim(sep, "-") != "" {
				return false
			}
			i = j
		}
	}
	return true
}

// plainTag: a word character, then up to 127 word characters, "." or "-".
func plainTag(t string) bool {
	if t == "" || len(t) > 128 || !isWord(t[0]) {
		return false
	}
	return allBytes(t, func(c byte) bool { return isWord(c) || c == '.' || c == '-' })
}

// plainSHA256: "sha256:" and 64 lower-case hexadecimal digits.
func plainSHA256(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	return ok && len(hex) == 64 && allBytes(hex, func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' })
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || isDigit(c) }
func isWord(c byte) bool       { return isLowerAlnum(c) || c >= 'A' && c <= 'Z' || c == '_' }
