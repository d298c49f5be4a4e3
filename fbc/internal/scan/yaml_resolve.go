package scan

import (
	"encoding/binary"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file resolves plain YAML scalars as go.yaml.in/yaml/v2 (the parser under
// sigs.k8s.io/yaml, which opm uses) does when it decodes into interface{}, and
// appends the JSON that sigs.k8s.io/yaml's YAMLToJSON writes for the result.
// It is a port of that library's resolve function: the same order of checks,
// the same strconv calls, so the fast YAML path agrees with the reference on
// every plain scalar (FuzzYAMLFastAgreement checks it).

// plainKind is what a plain scalar resolves to.
type plainKind uint8

const (
	plainStr plainKind = iota
	plainNull
	plainTrue
	plainFalse
	plainInt
	plainUint
	plainFloat
	// plainOther is a value the fast path leaves to the reference (the
	// merge key "<<", NaN and infinities, which JSON cannot hold).
	plainOther
)

// plainHint is v2's resolve table: which first bytes may start a non-string.
var plainHint = func() (t [256]byte) {
	t['+'], t['-'] = 'S', 'S'
	for c := '0'; c <= '9'; c++ {
		t[c] = 'D'
	}
	for _, c := range "yYnNtTfFoO~" {
		t[c] = 'M'
	}
	t['.'] = '.'
	return t
}()

// plainWords are v2's resolve map (the words that are not strings).
var plainWords = map[string]plainKind{
	"y": plainTrue, "Y": plainTrue, "yes": plainTrue, "Yes": plainTrue, "YES": plainTrue,
	"true": plainTrue, "True": plainTrue, "TRUE": plainTrue,
	"on": plainTrue, "On": plainTrue, "ON": plainTrue,
	"n": plainFalse, "N": plainFalse, "no": plainFalse, "No": plainFalse, "NO": plainFalse,
	"false": plainFalse, "False": plainFalse, "FALSE": plainFalse,
	"off": plainFalse, "Off": plainFalse, "OFF": plainFalse,
	"": plainNull, "~": plainNull, "null": plainNull, "Null": plainNull, "NULL": plainNull,
	".nan": plainOther, ".NaN": plainOther, ".NAN": plainOther,
	".inf": plainOther, ".Inf": plainOther, ".INF": plainOther,
	"+.inf": plainOther, "+.Inf": plainOther, "+.INF": plainOther,
	"-.inf": plainOther, "-.Inf": plainOther, "-.INF": plainOther,
	"<<": plainOther,
}

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// numberish reports whether every byte of s may appear in a number or a
// timestamp, so that long strings of other text skip strconv (whose errors
// copy the whole input).
func numberish(s []byte) bool {
	for _, c := range s {
		switch {
		case IsDigit(c), c == '_', c == '+', c == '-', c == '.', c == ':', c == ' ':
		case 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		case c == 'x', c == 'X', c == 'o', c == 'O', c == 't', c == 'T', c == 'z', c == 'Z':
		default:
			return false
		}
	}
	return true
}

// floatChars reports whether s has only characters yamlStyleFloat can match,
// which spares the regular expression most strings (versions, dates).
func floatChars(s string) bool {
	dots := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case IsDigit(c), c == '+', c == '-', c == 'e', c == 'E':
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return dots <= 1
}

// resolvePlain resolves the plain scalar s. For numbers, i, u or f holds the value.
func resolvePlain(s []byte) (k plainKind, i int64, u uint64, f float64) {
	if len(s) == 0 {
		return plainNull, 0, 0, 0
	}
	hint := plainHint[s[0]]
	if hint == 0 {
		return plainStr, 0, 0, 0
	}
	if len(s) <= 5 {
		if k, ok := plainWords[string(s)]; ok {
			return k, 0, 0, 0
		}
	}
	if len(s) > 64 && !numberish(s) {
		return plainStr, 0, 0, 0
	}
	in := string(s)
	switch hint {
	case '.':
		if v, err := strconv.ParseFloat(in, 64); err == nil {
			return plainFloat, 0, 0, v
		}
	case 'D', 'S':
		if isTimestamp(in) {
			return plainStr, 0, 0, 0 // v2 gives timestamps to interface{} as strings
		}
		plain := strings.ReplaceAll(in, "_", "")
		if v, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return plainInt, v, 0, 0
		}
		if v, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return plainUint, 0, v, 0
		}
		if floatChars(plain) && yamlStyleFloat.MatchString(plain) {
			if v, err := strconv.ParseFloat(plain, 64); err == nil {
				return plainFloat, 0, 0, v
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if v, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return plainInt, v, 0, 0
			}
			if v, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return plainUint, 0, v, 0
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if v, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return plainInt, v, 0, 0
			}
		}
	}
	return plainStr, 0, 0, 0
}

// timestampFormats are the layouts v2 tries for timestamps.
var timestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// isTimestamp is v2's parseTimestamp, as a predicate.
func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, format := range timestampFormats {
		if _, err := time.Parse(format, s); err == nil {
			return true
		}
	}
	return false
}

// appendPlain appends the JSON of the plain scalar s; ok is false when the
// fast path must leave the document to the reference.
func appendPlain(dst, s []byte) ([]byte, bool) {
	k, i, u, f := resolvePlain(s)
	switch k {
	case plainStr:
		return appendJSONString(dst, s), true
	case plainNull:
		return append(dst, "null"...), true
	case plainTrue:
		return append(dst, "true"...), true
	case plainFalse:
		return append(dst, "false"...), true
	case plainInt:
		return strconv.AppendInt(dst, i, 10), true
	case plainUint:
		return strconv.AppendUint(dst, u, 10), true
	case plainFloat:
		// Exactly what encoding/json writes for a float64 (NaN and
		// infinities fail there, and in the reference too).
		b, err := json.Marshal(f)
		if err != nil {
			return dst, false
		}
		return append(dst, b...), true
	}
	return dst, false
}

// appendJSONString appends s, valid UTF-8, as encoding/json writes it with
// HTML escaping off (which is what Load makes of the reference's output, see
// UnescapeHTML), in one pass. Every string of the fast path is valid UTF-8:
// the document passed yamlPrintable, and escapes are decoded to runes.
func appendJSONString(dst, s []byte) []byte {
	dst = slices.Grow(dst, len(s)+2)
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped appends the JSON string body of s, valid UTF-8 (see
// appendJSONString).
func appendEscaped(dst, s []byte) []byte {
	start, i := 0, 0
	for i < len(s) {
		for i+8 <= len(s) {
			w := binary.LittleEndian.Uint64(s[i:])
			if special(w) || w&hi8 != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		switch c := s[i]; {
		case c == '"' || c == '\\' || c < 0x20:
			dst = append(dst, s[start:i]...)
			dst = appendEscapedASCII(dst, c)
			i++
			start = i
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8:
			// U+2028 and U+2029, which encoding/json escapes.
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\u202`...)
			dst = append(dst, "89"[s[i+2]&1])
			i += 3
			start = i
		default:
			i++
		}
	}
	return append(dst, s[start:]...)
}
