package scan

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// TestYAMLPrintableEveryByte puts every byte value at every position of the
// word-at-a-time loops (and of the tail) and checks yamlPrintable against the
// definition, one character at a time.
func TestYAMLPrintableEveryByte(t *testing.T) {
	want := func(doc []byte) bool {
		for _, r := range string(doc) {
			switch {
			case r == '\n' || r == '\t' || (r >= 0x20 && r < 0x7f):
			case r == utf8.RuneError, r < 0xA0, r > 0xD7FF && r < 0xE000, r > 0xFFFD && r < 0x10000,
				r == 0x2028, r == 0x2029, r == 0xFEFF:
				return false
			}
		}
		return true
	}
	for c := 0; c < 256; c++ {
		for n := 1; n <= 40; n++ {
			for p := 0; p < n; p++ {
				doc := bytes.Repeat([]byte{'a'}, n)
				doc[p] = byte(c)
				if got := yamlPrintable(doc); got != want(doc) {
					t.Fatalf("byte %#x at %d of %d: yamlPrintable = %v", c, p, n, got)
				}
			}
		}
	}
	for _, s := range []string{"héllo wörld, a line\nand\ta tab", "\u2028 in a longer text of bytes", "abcdefghijklmnop\u0085q", "x\uFEFFyyyyyyyyyyyyyyyyyy"} {
		if got := yamlPrintable([]byte(s)); got != want([]byte(s)) {
			t.Errorf("%q: yamlPrintable = %v", s, got)
		}
	}
}
