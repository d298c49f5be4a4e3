// Package jsonindent writes JSON indented as encoding/json's MarshalIndent does,
// in one pass over the compact encoding without json.Indent's scanner, which
// calls a state function per byte: at 20,000 images indenting plan.json,
// results.json and the report's data cost a no-op re-run about half of its
// JSON time.
package jsonindent

import (
	"bytes"
	"encoding/json"
	"io"
)

// Marshal returns what json.MarshalIndent(v, "", indent) returns, byte for byte.
func Marshal(v any, indent string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Append(make([]byte, 0, len(b)+len(b)/2), b, indent), nil
}

// Encode writes what json.MarshalIndent(v, "", indent) returns, and a
// newline, to w. The indented document is never held whole: it is written
// in pieces of about flushAt bytes as the compact encoding is indented (at
// 20,000 images plan.json and results.json are 10-13 MB each).
func Encode(w io.Writer, v any, indent string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dst, err := appendIndent(make([]byte, 0, flushAt+flushAt/4), b, indent, w)
	if err == nil {
		_, err = w.Write(append(dst, '\n'))
	}
	return err
}

// flushAt is the size of the pieces Encode writes.
const flushAt = 64 << 10

// Append appends src, compact JSON as json.Marshal writes it (no whitespace
// outside strings), to dst indented as json.Indent(dst, src, "", indent) does:
// a newline and one indent per level after each opening bracket and comma,
// ": " after each key, empty objects and arrays kept as {} and [].
func Append(dst, src []byte, indent string) []byte {
	dst, _ = appendIndent(dst, src, indent, nil)
	return dst
}

// appendIndent is Append; with w, it writes dst to w and empties it each
// time dst holds flushAt bytes or more, and returns what is left to write.
func appendIndent(dst, src []byte, indent string, w io.Writer) ([]byte, error) {
	depth := 0
	for i := 0; i < len(src); i++ {
		if w != nil && len(dst) >= flushAt {
			if _, err := w.Write(dst); err != nil {
				return nil, err
			}
			dst = dst[:0]
		}
		switch c := src[i]; c {
		case '"':
			end := stringEnd(src, i+1)
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			dst = newline(dst, indent, depth)
		case '}', ']':
			depth--
			dst = newline(dst, indent, depth)
			dst = append(dst, c)
		case ',':
			dst = append(dst, ',')
			dst = newline(dst, indent, depth)
		case ':':
			dst = append(dst, ':', ' ')
		default:
			// A number or a literal: copy it to the next structural byte.
			j := i + 1
			for j < len(src) && !structural(src[j]) {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j - 1
		}
	}
	return dst, nil
}

// stringEnd returns the index just past the closing quote of the string whose
// contents start at i (len(src) when it is not closed).
func stringEnd(src []byte, i int) int {
	for {
		q := bytes.IndexByte(src[i:], '"')
		if q < 0 {
			return len(src)
		}
		q += i
		backslashes := 0
		for k := q - 1; k >= i && src[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

func structural(c byte) bool {
	switch c {
	case '"', '{', '}', '[', ']', ',', ':':
		return true
	}
	return false
}

func newline(dst []byte, indent string, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}
