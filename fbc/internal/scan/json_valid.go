package scan

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// This file holds the small JSON scanner fbc's Load and Write use instead of
// encoding/json: a strict validator that never builds a value (so the base64
// payloads of olm.bundle.object properties are checked and skipped at memory
// speed), a fast skipper for data already validated, and compact/indent writers.

// maxDepth bounds the nesting of JSON values, so hostile input cannot exhaust
// the stack.
const maxDepth = 10000

// SyntaxError is a JSON syntax error at a byte offset of a document.
type SyntaxError struct {
	Off int    // the byte offset in the document
	Msg string // the message
	Err error  // a sentinel it matches, if any
}

func (e *SyntaxError) Error() string { return e.Msg }
func (e *SyntaxError) Unwrap() error { return e.Err }

// Errorf returns a *SyntaxError at byte offset off.
func Errorf(off int, format string, args ...any) error {
	return &SyntaxError{Off: off, Msg: fmt.Sprintf(format, args...)}
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the offset of the first byte at or after d[i] that is not
// JSON white space.
func SkipSpace(d []byte, i int) int {
	for i < len(d) && IsSpace(d[i]) {
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
			return 0, Errorf(start, "unterminated string")
		}
		c := d[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(d) {
				return 0, Errorf(start, "unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return 0, Errorf(i, "invalid \\u escape in string")
				}
				for _, h := range d[i+2 : i+6] {
					if !isHex(h) {
						return 0, Errorf(i, "invalid \\u escape in string")
					}
				}
				i += 6
			default:
				return 0, Errorf(i, "invalid escape %q in string", d[i:i+2])
			}
		case c < 0x20:
			return 0, Errorf(i, "invalid control character %q in string", c)
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// IsDigit reports whether c is an ASCII digit.
func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

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
		for i < len(d) && IsDigit(d[i]) {
			i++
		}
	default:
		return 0, Errorf(start, "invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !IsDigit(d[i]) {
			return 0, Errorf(start, "invalid number")
		}
		for i < len(d) && IsDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !IsDigit(d[i]) {
			return 0, Errorf(start, "invalid number")
		}
		for i < len(d) && IsDigit(d[i]) {
			i++
		}
	}
	return i, nil
}

// ValidValue validates the JSON value starting at d[i] (no leading space) and
// returns the offset just after it.
func ValidValue(d []byte, i, depth int) (int, error) {
	if i >= len(d) {
		return 0, Errorf(i, "unexpected end of JSON input")
	}
	if depth > maxDepth {
		return 0, Errorf(i, "JSON nested too deeply")
	}
	switch c := d[i]; {
	case c == '"':
		return validString(d, i)
	case c == '{':
		i = SkipSpace(d, i+1)
		if i < len(d) && d[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(d) || d[i] != '"' {
				return 0, Errorf(i, "expected a string object key")
			}
			var err error
			if i, err = validString(d, i); err != nil {
				return 0, err
			}
			i = SkipSpace(d, i)
			if i >= len(d) || d[i] != ':' {
				return 0, Errorf(i, "expected ':' after object key")
			}
			i = SkipSpace(d, i+1)
			if i, err = ValidValue(d, i, depth+1); err != nil {
				return 0, err
			}
			i = SkipSpace(d, i)
			if i < len(d) && d[i] == ',' {
				i = SkipSpace(d, i+1)
				continue
			}
			if i < len(d) && d[i] == '}' {
				return i + 1, nil
			}
			return 0, Errorf(i, "expected ',' or '}' in object")
		}
	case c == '[':
		i = SkipSpace(d, i+1)
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = ValidValue(d, i, depth+1); err != nil {
				return 0, err
			}
			i = SkipSpace(d, i)
			if i < len(d) && d[i] == ',' {
				i = SkipSpace(d, i+1)
				continue
			}
			if i < len(d) && d[i] == ']' {
				return i + 1, nil
			}
			return 0, Errorf(i, "expected ',' or ']' in array")
		}
	case c == '-' || IsDigit(c):
		return validNumber(d, i)
	case c == 't':
		return literal(d, i, "true")
	case c == 'f':
		return literal(d, i, "false")
	case c == 'n':
		return literal(d, i, "null")
	default:
		return 0, Errorf(i, "invalid character %q looking for beginning of value", c)
	}
}

func literal(d []byte, i int, lit string) (int, error) {
	if !bytes.HasPrefix(d[i:], []byte(lit)) {
		return 0, Errorf(i, "invalid literal, expected %s", lit)
	}
	return i + len(lit), nil
}

// StringEnd returns the offset just after the closing quote of the (valid)
// string whose opening quote is at d[i], or -1 if it is not terminated in d.
func StringEnd(d []byte, i int) int {
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

// SkipValue returns the offset just after the already validated value at d[i].
func SkipValue(d []byte, i int) int {
	switch d[i] {
	case '"':
		return StringEnd(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				i = StringEnd(d, i)
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

// AppendCompact appends the validated JSON value v without insignificant space.
func AppendCompact(dst, v []byte) []byte {
	i := 0
	for i < len(v) {
		c := v[i]
		switch {
		case c == '"':
			e := StringEnd(v, i)
			dst = append(dst, v[i:e]...)
			i = e
		case IsSpace(c):
			i++
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// AppendIndent appends the validated JSON value v indented like encoding/json's
// Indent with the given prefix and a 4-space indent.
func AppendIndent(dst, v []byte, prefix string) []byte {
	depth := 0
	// nl[:1+len(prefix)+4*depth] starts a line at depth.
	nl := make([]byte, 0, 1+len(prefix)+64)
	nl = append(append(nl, '\n'), prefix...)
	newline := func() {
		n := 1 + len(prefix) + 4*depth
		for len(nl) < n {
			nl = append(nl, ' ')
		}
		dst = append(dst, nl[:n]...)
	}
	i := 0
	for i < len(v) {
		c := v[i]
		switch {
		case c == '"':
			e := StringEnd(v, i)
			dst = append(dst, v[i:e]...)
			i = e
			continue
		case IsSpace(c):
		case c == '{' || c == '[':
			dst = append(dst, c)
			j := SkipSpace(v, i+1)
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

// ValidJSONValue validates the JSON value starting at d[i] (no leading space)
// with the scanner Load uses, at memory speed, and returns the offset just
// after it; ok is false when it is not valid. It never accepts what
// encoding/json's Valid refuses; it may refuse a value nested near
// encoding/json's depth limit that Valid accepts, so a caller that must agree
// with encoding/json asks it when ok is false.
func ValidJSONValue(d []byte, i int) (end int, ok bool) {
	end, err := ValidValue(d, i, 1)
	return end, err == nil
}
