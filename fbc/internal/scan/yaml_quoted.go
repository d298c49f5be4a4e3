package scan

import (
	"unicode/utf8"
)

// doubleQuoted decodes the double-quoted scalar at p, which must end before
// limit. ind is nil for a single-line scalar (a key), else the column its
// continuation lines must be indented beyond. It returns the value (valid
// until the next scalar) and the offset after the closing quote.
func (c *YAMLConverter) doubleQuoted(p, limit int, ind *int) ([]byte, int, bool) {
	s := c.src
	b := c.sbuf[:0]
	q := p + 1
	keep := 0 // b[:keep] ends with an escape: line folding does not trim it
	for {
		b, q = c.copyRun(b, q, limit, '"', '\\')
		if q >= limit {
			c.sbuf = b
			return nil, 0, false
		}
		switch s[q] {
		case '"':
			c.sbuf = b
			return b, q + 1, true
		case '\\':
			if q+1 >= limit {
				c.sbuf = b
				return nil, 0, false
			}
			e := s[q+1]
			q += 2
			switch e {
			case '0':
				b = append(b, 0)
			case 'a':
				b = append(b, 7)
			case 'b':
				b = append(b, 8)
			case 't', '\t':
				b = append(b, 9)
			case 'n':
				b = append(b, 10)
			case 'v':
				b = append(b, 11)
			case 'f':
				b = append(b, 12)
			case 'r':
				b = append(b, 13)
			case 'e':
				b = append(b, 27)
			case ' ', '"', '\'', '\\':
				b = append(b, e)
			case 'N':
				b = utf8.AppendRune(b, 0x85)
			case '_':
				b = utf8.AppendRune(b, 0xA0)
			case 'L':
				b = utf8.AppendRune(b, 0x2028)
			case 'P':
				b = utf8.AppendRune(b, 0x2029)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if q+n > limit {
					c.sbuf = b
					return nil, 0, false
				}
				v := 0
				for _, h := range s[q : q+n] {
					if !isHex(h) {
						c.sbuf = b
						return nil, 0, false
					}
					v = v<<4 | int(hexVal(h))
				}
				if v >= 0xD800 && v <= 0xDFFF || v > 0x10FFFF {
					c.sbuf = b
					return nil, 0, false
				}
				b = utf8.AppendRune(b, rune(v))
				q += n
			case '\n':
				// An escaped line break: the next line's leading space goes.
				if ind == nil {
					c.sbuf = b
					return nil, 0, false
				}
				var ok bool
				var blanks int
				if q, blanks, ok = c.foldBreaks(q-1, limit, *ind); !ok {
					c.sbuf = b
					return nil, 0, false
				}
				for ; blanks > 0; blanks-- {
					b = append(b, '\n')
				}
			default:
				c.sbuf = b
				return nil, 0, false
			}
			keep = len(b)
		case '\n':
			if ind == nil {
				c.sbuf = b
				return nil, 0, false
			}
			var ok bool
			if b, q, ok = c.fold(b, keep, q, limit, *ind); !ok {
				c.sbuf = b
				return nil, 0, false
			}
		}
	}
}

// copyRun appends to b the text from q up to limit, a line break, stop1 or
// stop2, and returns where it stopped.
func (c *YAMLConverter) copyRun(b []byte, q, limit int, stop1, stop2 byte) ([]byte, int) {
	s := c.src
	r := q
	for r < limit && s[r] != stop1 && s[r] != stop2 && s[r] != '\n' {
		r++
	}
	return append(b, s[q:r]...), r
}

// fold folds the line break at q of a flow scalar whose text so far is b:
// the white space b ends with goes (not b[:keep]: escapes), then the break
// becomes one space or the blank lines after it.
func (c *YAMLConverter) fold(b []byte, keep, q, limit, ind int) ([]byte, int, bool) {
	for len(b) > keep && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	nq, blanks, ok := c.foldBreaks(q, limit, ind)
	if !ok {
		return b, 0, false
	}
	return appendFold(b, blanks), nq, true
}

// appendFold appends what a line break of a flow scalar becomes: a space, or
// one line feed per blank line that followed it.
func appendFold(b []byte, blanks int) []byte {
	if blanks == 0 {
		return append(b, ' ')
	}
	for ; blanks > 0; blanks-- {
		b = append(b, '\n')
	}
	return b
}

// foldBreaks skips the line break at q, the blank lines after it and the
// leading white space of the next line, which must be indented more than ind.
// It returns where the text goes on and the number of blank lines.
func (c *YAMLConverter) foldBreaks(q, limit, ind int) (int, int, bool) {
	s := c.src
	blanks := 0
	for {
		q++ // the '\n'
		m := c.indent(q)
		r := q + m
		for r < limit && s[r] == '\t' {
			r++
		}
		if r >= limit {
			return 0, 0, false
		}
		if s[r] == '\n' {
			blanks++
			q = r
			continue
		}
		if m <= ind || r > q+m {
			return 0, 0, false // under-indented or tab-indented continuation: left to the reference
		}
		return r, blanks, true
	}
}

func hexVal(h byte) byte {
	switch {
	case h >= 'a':
		return h - 'a' + 10
	case h >= 'A':
		return h - 'A' + 10
	}
	return h - '0'
}

// singleQuoted is doubleQuoted for single-quoted scalars (two quotes are one).
func (c *YAMLConverter) singleQuoted(p, limit int, ind *int) ([]byte, int, bool) {
	s := c.src
	b := c.sbuf[:0]
	q := p + 1
	for {
		b, q = c.copyRun(b, q, limit, '\'', '\'')
		if q >= limit {
			c.sbuf = b
			return nil, 0, false
		}
		if s[q] == '\'' {
			if q+1 < limit && s[q+1] == '\'' {
				b = append(b, '\'')
				q += 2
				continue
			}
			c.sbuf = b
			return b, q + 1, true
		}
		if ind == nil {
			c.sbuf = b
			return nil, 0, false
		}
		var ok bool
		if b, q, ok = c.fold(b, 0, q, limit, *ind); !ok {
			c.sbuf = b
			return nil, 0, false
		}
	}
}
