package prune

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the small JSON scanner Load and Write use instead of
// encoding/json: a strict validator that never builds a value (so the base64
// payloads of olm.bundle.object properties are checked and skipped at memory
// speed), a fast skipper for data already validated, and compact/indent writers.

// maxDepth bounds the nesting of JSON values, so hostile input cannot exhaust
// the stack.
const maxDepth = 10000

// maxDocumentSize bounds one JSON document (one top-level value) of a catalog
// file, so that a file holding one huge value cannot exhaust memory. The largest
// real document we know of is 4.8 MB (a bundle of shared/fixtures/large).
var maxDocumentSize = 64 << 20 // a variable so tests can lower it

// ErrDocumentTooLarge is returned (wrapped in a LoadError naming the file and
// line) for a JSON document larger than 64 MiB.
var ErrDocumentTooLarge = errors.New("JSON document too large")

// syntaxError is a JSON syntax error at a byte offset of a document.
type syntaxError struct {
	off int
	msg string
	err error // a sentinel it matches, if any
}

func (e *syntaxError) Error() string { return e.msg }
func (e *syntaxError) Unwrap() error { return e.err }

func synErr(off int, format string, args ...any) error {
	return &syntaxError{off: off, msg: fmt.Sprintf(format, args...)}
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(d []byte, i int) int {
	for i < len(d) && isWS(d[i]) {
		i++
	}
	return i
}

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// special reports whether one of the 8 bytes of w is '"', '\\' or below 0x20.
func special(w uint64) bool {
	ctl := (w - 0x20*lo8) & ^w & hi8
	q := w ^ ('"' * lo8)
	q = (q - lo8) & ^q & hi8
	b := w ^ ('\\' * lo8)
	b = (b - lo8) & ^b & hi8
	return ctl|q|b != 0
}

// validString validates the JSON string whose opening quote is at d[i] and
// returns the offset just after its closing quote.
func validString(d []byte, i int) (int, error) {
	start := i
	i++
	for {
		for i+8 <= len(d) && !special(binary.LittleEndian.Uint64(d[i:])) {
			i += 8
		}
		if i >= len(d) {
			return 0, synErr(start, "unterminated string")
		}
		c := d[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(d) {
				return 0, synErr(start, "unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return 0, synErr(i, "invalid \\u escape in string")
				}
				for _, h := range d[i+2 : i+6] {
					if !isHex(h) {
						return 0, synErr(i, "invalid \\u escape in string")
					}
				}
				i += 6
			default:
				return 0, synErr(i, "invalid escape %q in string", d[i:i+2])
			}
		case c < 0x20:
			return 0, synErr(i, "invalid control character %q in string", c)
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validNumber validates the JSON number starting at d[i].
func validNumber(d []byte, i int) (int, error) {
	start := i
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return 0, synErr(start, "invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return 0, synErr(start, "invalid number")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return 0, synErr(start, "invalid number")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	return i, nil
}

// validValue validates the JSON value starting at d[i] (no leading space) and
// returns the offset just after it.
func validValue(d []byte, i, depth int) (int, error) {
	if i >= len(d) {
		return 0, synErr(i, "unexpected end of JSON input")
	}
	if depth > maxDepth {
		return 0, synErr(i, "JSON nested too deeply")
	}
	switch c := d[i]; {
	case c == '"':
		return validString(d, i)
	case c == '{':
		i = skipWS(d, i+1)
		if i < len(d) && d[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(d) || d[i] != '"' {
				return 0, synErr(i, "expected a string object key")
			}
			var err error
			if i, err = validString(d, i); err != nil {
				return 0, err
			}
			i = skipWS(d, i)
			if i >= len(d) || d[i] != ':' {
				return 0, synErr(i, "expected ':' after object key")
			}
			i = skipWS(d, i+1)
			if i, err = validValue(d, i, depth+1); err != nil {
				return 0, err
			}
			i = skipWS(d, i)
			if i < len(d) && d[i] == ',' {
				i = skipWS(d, i+1)
				continue
			}
			if i < len(d) && d[i] == '}' {
				return i + 1, nil
			}
			return 0, synErr(i, "expected ',' or '}' in object")
		}
	case c == '[':
		i = skipWS(d, i+1)
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = validValue(d, i, depth+1); err != nil {
				return 0, err
			}
			i = skipWS(d, i)
			if i < len(d) && d[i] == ',' {
				i = skipWS(d, i+1)
				continue
			}
			if i < len(d) && d[i] == ']' {
				return i + 1, nil
			}
			return 0, synErr(i, "expected ',' or ']' in array")
		}
	case c == '-' || isDigit(c):
		return validNumber(d, i)
	case c == 't':
		return literal(d, i, "true")
	case c == 'f':
		return literal(d, i, "false")
	case c == 'n':
		return literal(d, i, "null")
	default:
		return 0, synErr(i, "invalid character %q looking for beginning of value", c)
	}
}

func literal(d []byte, i int, lit string) (int, error) {
	if !bytes.HasPrefix(d[i:], []byte(lit)) {
		return 0, synErr(i, "invalid literal, expected %s", lit)
	}
	return i + len(lit), nil
}

// stringEnd returns the offset just after the closing quote of the (valid)
// string whose opening quote is at d[i], or -1 if it is not terminated in d.
func stringEnd(d []byte, i int) int {
	i++
	j := bytes.IndexByte(d[i:], '"')
	if j < 0 {
		return -1
	}
	i += j
	n := 0
	for k := i - 1; k >= 0 && d[k] == '\\'; k-- {
		n++
	}
	i++
	if n%2 == 0 {
		return i
	}
	// An escaped quote: the string has escapes (often many, as in embedded
	// JSON), so scan the rest for quotes and backslashes together.
	for {
		for i+8 <= len(d) {
			w := binary.LittleEndian.Uint64(d[i:])
			q := w ^ ('"' * lo8)
			b := w ^ ('\\' * lo8)
			if ((q-lo8)&^q|(b-lo8)&^b)&hi8 != 0 {
				break
			}
			i += 8
		}
		if i >= len(d) {
			return -1
		}
		switch d[i] {
		case '"':
			return i + 1
		case '\\':
			i += 2
		default:
			i++
		}
	}
}

// skipValue returns the offset just after the already validated value at d[i].
func skipValue(d []byte, i int) int {
	switch d[i] {
	case '"':
		return stringEnd(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				i = stringEnd(d, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(d)
	default:
		for i < len(d) {
			switch d[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// appendCompact appends the validated JSON value v without insignificant space.
func appendCompact(dst, v []byte) []byte {
	i := 0
	for i < len(v) {
		c := v[i]
		switch {
		case c == '"':
			e := stringEnd(v, i)
			dst = append(dst, v[i:e]...)
			i = e
		case isWS(c):
			i++
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// appendIndent appends the validated JSON value v indented like encoding/json's
// Indent with the given prefix and a 4-space indent.
func appendIndent(dst, v []byte, prefix string) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for k := 0; k < depth; k++ {
			dst = append(dst, "    "...)
		}
	}
	i := 0
	for i < len(v) {
		c := v[i]
		switch {
		case c == '"':
			e := stringEnd(v, i)
			dst = append(dst, v[i:e]...)
			i = e
			continue
		case isWS(c):
		case c == '{' || c == '[':
			dst = append(dst, c)
			j := skipWS(v, i+1)
			if j < len(v) && (v[j] == '}' || v[j] == ']') {
				dst = append(dst, v[j])
				i = j + 1
				continue
			}
			depth++
			newline()
		case c == '}' || c == ']':
			depth--
			newline()
			dst = append(dst, c)
		case c == ',':
			dst = append(dst, c)
			newline()
		case c == ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
		i++
	}
	return dst
}

// field is one member of a JSON object: its key and the span of its value.
type field struct {
	key        string
	start, end int
}

// objectFields validates the JSON object at d[i] and returns its members.
func objectFields(d []byte, i int, fields []field) ([]field, int, error) {
	if i >= len(d) || d[i] != '{' {
		return fields, 0, synErr(i, "expected an object")
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return fields, i + 1, nil
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return fields, 0, synErr(i, "expected a string object key")
		}
		ke, err := validString(d, i)
		if err != nil {
			return fields, 0, err
		}
		key, err := unquote(d[i:ke])
		if err != nil {
			return fields, 0, synErr(i, "%v", err)
		}
		i = skipWS(d, ke)
		if i >= len(d) || d[i] != ':' {
			return fields, 0, synErr(i, "expected ':' after object key")
		}
		i = skipWS(d, i+1)
		vs := i
		if i, err = validValue(d, i, 1); err != nil {
			return fields, 0, err
		}
		fields = append(fields, field{key: key, start: vs, end: i})
		i = skipWS(d, i)
		if i < len(d) && d[i] == ',' {
			i = skipWS(d, i+1)
			continue
		}
		if i < len(d) && d[i] == '}' {
			return fields, i + 1, nil
		}
		return fields, 0, synErr(i, "expected ',' or '}' in object")
	}
}

// trustedFields is objectFields for an object known to be valid JSON (the
// YAML converters wrote it): it only finds the members' bounds.
func trustedFields(d []byte, i int, fields []field) ([]field, int, error) {
	i = skipWS(d, i+1)
	for i < len(d) && d[i] != '}' {
		ke := stringEnd(d, i)
		key, err := unquote(d[i:ke])
		if err != nil {
			return fields, 0, err
		}
		i = skipWS(d, ke)
		i = skipWS(d, i+1) // ':'
		ve := skipValue(d, i)
		fields = append(fields, field{key: key, start: i, end: ve})
		i = skipWS(d, ve)
		if i < len(d) && d[i] == ',' {
			i = skipWS(d, i+1)
		}
	}
	return fields, i + 1, nil
}

// eachMember calls f for every member of the validated object v.
func eachMember(v []byte, f func(key string, val []byte) error) error {
	i := skipWS(v, 1)
	for i < len(v) && v[i] != '}' {
		ke := stringEnd(v, i)
		key, err := unquote(v[i:ke])
		if err != nil {
			return err
		}
		i = skipWS(v, ke)
		i = skipWS(v, i+1) // ':'
		ve := skipValue(v, i)
		if err := f(key, v[i:ve]); err != nil {
			return err
		}
		i = skipWS(v, ve)
		if i < len(v) && v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
	return nil
}

// eachElement calls f for every element of the validated array v.
func eachElement(v []byte, f func(n int, val []byte) error) error {
	i := skipWS(v, 1)
	for n := 0; i < len(v) && v[i] != ']'; n++ {
		ve := skipValue(v, i)
		if err := f(n, v[i:ve]); err != nil {
			return err
		}
		i = skipWS(v, ve)
		if i < len(v) && v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
	return nil
}

// unquote decodes the valid JSON string literal q (quotes included) like
// encoding/json: invalid UTF-8 and lone surrogates become U+FFFD.
func unquote(q []byte) (string, error) {
	s := q[1 : len(q)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s), nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\\' {
			switch s[i+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(s[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if r2 := utf16.DecodeRune(r, hex4(s[i+2:i+6])); r2 != utf8.RuneError {
							b = utf8.AppendRune(b, r2)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default: // '"', '\\', '/'
				b = append(b, s[i+1])
			}
			i += 2
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		b = utf8.AppendRune(b, r)
		i += size
	}
	return string(b), nil
}

func hex4(h []byte) rune {
	n, _ := strconv.ParseUint(string(h), 16, 32)
	return rune(n)
}

// kindOf names the JSON type of the value v for error messages.
func kindOf(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// appendString appends s as a JSON string escaped like encoding/json with HTML
// escaping off.
func appendString(dst []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip runs of 8 bytes that need no escaping.
		for i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if special(w) || w&hi8 != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexd[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// unescapeHTML undoes the \u003c, \u003e and \u0026 escapes that encoding/json
// (used by the YAML to JSON conversion) puts in strings, so that documents read
// from YAML carry the same bytes as from JSON.
func unescapeHTML(j []byte) []byte {
	if !bytes.Contains(j, []byte(`\u00`)) {
		return j
	}
	out := make([]byte, 0, len(j))
	for i := 0; i < len(j); i++ {
		c := j[i]
		if c != '\\' || i+1 >= len(j) {
			out = append(out, c)
			continue
		}
		if j[i+1] == 'u' && i+6 <= len(j) {
			switch string(j[i+2 : i+6]) {
			case "003c", "003C":
				out = append(out, '<')
				i += 5
				continue
			case "003e", "003E":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, c, j[i+1])
		i++
	}
	return out
}
