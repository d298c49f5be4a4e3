package validate

import (
	"strings"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// plainReference reports whether s is an image reference of the common shape
// that github.com/distribution/reference's ParseNormalizedNamed surely
// accepts: DOMAIN/PATH[:TAG][@sha256:HEX], where DOMAIN has a dot (lower-case
// labels, an optional port), PATH is lower-case components, TAG follows the
// tag grammar and HEX is 64 lower-case hex digits. false means "ask the
// library": it is only a shortcut around its regular expressions, which were
// a third of Catalog's time on real catalogs.
func plainReference(s string) bool {
	if strings.HasPrefix(s, "docker.io/") || strings.HasPrefix(s, "index.docker.io/") {
		return false // normalized to docker.io/library/...: a longer name
	}
	i, dots := 0, 0
	// DOMAIN: labels of [a-z0-9] with inner '-', separated by '.'.
	for {
		j := i
		for j < len(s) && (isLowerAlnum(s[j]) || s[j] == '-') {
			j++
		}
		if j == i || s[i] == '-' || s[j-1] == '-' {
			return false
		}
		i = j
		if i < len(s) && s[i] == '.' {
			dots++
			i++
			continue
		}
		break
	}
	if dots == 0 {
		return false
	}
	if i < len(s) && s[i] == ':' { // port
		j := i + 1
		for j < len(s) && scan.IsDigit(s[j]) {
			j++
		}
		if j == i+1 {
			return false
		}
		i = j
	}
	// PATH: components of [a-z0-9] joined by '.', '_', "__" or '-'+.
	for {
		if i >= len(s) || s[i] != '/' {
			return false
		}
		i++
		for {
			j := i
			for j < len(s) && isLowerAlnum(s[j]) {
				j++
			}
			if j == i {
				return false
			}
			i = j
			if i >= len(s) {
				break
			}
			switch s[i] {
			case '.':
				i++
				continue
			case '_':
				i++
				if i < len(s) && s[i] == '_' {
					i++
				}
				continue
			case '-':
				for i < len(s) && s[i] == '-' {
					i++
				}
				continue
			}
			break
		}
		if i >= len(s) || s[i] != '/' {
			break
		}
	}
	if i > 255 { // the name's length limit
		return false
	}
	if i < len(s) && s[i] == ':' { // TAG: [\w][\w.-]{0,127}
		i++
		j := i
		for j < len(s) && j-i < 128 && (isWordByte(s[j]) || (j > i && (s[j] == '.' || s[j] == '-'))) {
			j++
		}
		if j == i {
			return false
		}
		i = j
	}
	if i < len(s) && s[i] == '@' { // DIGEST: sha256 only
		const alg = "@sha256:"
		if len(s)-i != len(alg)+64 || s[i:i+len(alg)] != alg {
			return false
		}
		for _, c := range []byte(s[i+len(alg):]) {
			if !scan.IsDigit(c) && (c < 'a' || c > 'f') {
				return false
			}
		}
		i = len(s)
	}
	return i == len(s)
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || scan.IsDigit(c) }

func isWordByte(c byte) bool {
	return isLowerAlnum(c) || 'A' <= c && c <= 'Z' || c == '_'
}
