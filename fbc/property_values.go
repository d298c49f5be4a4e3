package fbc

import (
	"unicode/utf8"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// stringObject decodes raw into dst when it is a JSON object whose members
// all have plain string values (no escapes, valid UTF-8) and plain ASCII
// keys: the member whose key matches names[i] (ASCII case folded, the last
// one winning, as encoding/json matches fields) goes to *dst[i], the others
// are ignored. It is the shape of nearly every olm.gvk, olm.package and
// olm.package.required value; false means "decode with encoding/json" (its
// verdict and its messages), and then dst may hold part of the value.
func stringObject(raw []byte, names []string, dst []*string) bool {
	i := scan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = scan.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return scan.SkipSpace(raw, i+1) == len(raw)
	}
	for {
		k, e, ok := plainJSONString(raw, i)
		if !ok || !isASCII(k) {
			return false // encoding/json folds some non-ASCII letters to ASCII ones
		}
		i = scan.SkipSpace(raw, e)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = scan.SkipSpace(raw, i+1)
		v, e, ok := plainJSONString(raw, i)
		if !ok {
			return false
		}
		for n, name := range names {
			if len(k) == len(name) && asciiEqualFold(k, name) {
				*dst[n] = string(v)
			}
		}
		i = scan.SkipSpace(raw, e)
		if i < len(raw) && raw[i] == ',' {
			i = scan.SkipSpace(raw, i+1)
			continue
		}
		if i < len(raw) && raw[i] == '}' {
			return scan.SkipSpace(raw, i+1) == len(raw)
		}
		return false
	}
}

// plainJSONString returns the contents of the JSON string at raw[i] and the
// offset after it, when it has no escapes, no control characters and is
// valid UTF-8.
func plainJSONString(raw []byte, i int) ([]byte, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			s := raw[i+1 : j]
			return s, j + 1, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, 0, false
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
