package scan

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes the valid JSON string literal q (quotes included) like
// encoding/json: invalid UTF-8 and lone surrogates become U+FFFD.
func Unquote(q []byte) (string, error) {
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

// AppendString appends s as a JSON string escaped like encoding/json with HTML
// escaping off.
func AppendString(dst []byte, s string) []byte {
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
			dst = appendEscapedASCII(dst, c)
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

// appendEscapedASCII appends the escape encoding/json writes for c, a quote, a
// backslash or a control character.
func appendEscapedASCII(dst []byte, c byte) []byte {
	const hexd = "0123456789abcdef"
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
}

// UnescapeHTML undoes the \u003c, \u003e and \u0026 escapes that encoding/json
// (used by the YAML to JSON conversion) puts in strings, so that documents read
// from YAML carry the same bytes as from JSON.
func UnescapeHTML(j []byte) []byte {
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
