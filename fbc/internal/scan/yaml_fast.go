package scan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sort"
	"unicode/utf8"
)

// MaxKeptScratch is the largest scratch buffer kept between values.
const MaxKeptScratch = 16 << 20

// This file is the fast path of YAML loading: a converter from one YAML
// document to the JSON bytes that sigs.k8s.io/yaml's YAMLToJSON (the reference,
// what opm uses) gives for it after unescapeHTML, written for the regular
// shape of file-based catalogs (the output of `opm render -o yaml`, and most
// hand-written files): block mappings and sequences, plain, single- and
// double-quoted scalars on one or more lines, literal and folded block scalars,
// comments, empty flow collections.
//
// Anything else — anchors, aliases, tags, flow collections, complex keys,
// directives, tabs in indentation, non-string keys, duplicate keys, floats
// JSON cannot hold, any syntax error — makes Convert return ok == false, and
// the caller converts the document with the reference instead, so the result
// is always the reference's (with its error messages). The converter never
// guesses: when a construct's meaning depends on a rule it does not implement,
// it declines. FuzzYAMLFastAgreement (and the conformance module, against opm)
// check that whatever it accepts, it converts exactly as the reference does.

// YAMLConverter converts documents; it reuses its buffers between documents.
type YAMLConverter struct {
	src  []byte
	pos  int // start of the line being parsed
	out  []byte
	mem  []member // open mappings' members, innermost last
	tmp  []byte   // scratch for reordering and decoding scalars
	sbuf []byte
	// Top are the members of the document's object in out, as
	// objectFields would find them (so the decoder does not scan again).
	Top []Field
}

// member is one member of a mapping being written: its key and its span in out.
type member struct {
	key                []byte
	start, vstart, end int // the member, its value
}

// Convert returns the JSON of doc, valid until the next call; ok is false when
// the document must go to the reference converter.
func (c *YAMLConverter) Convert(doc []byte) (j []byte, ok bool) {
	if !yamlPrintable(doc) {
		return nil, false
	}
	c.src, c.pos, c.out, c.mem = doc, 0, c.out[:0], c.mem[:0]
	if !c.skipBlank() || c.pos >= len(doc) {
		return nil, false // empty documents are rare: the reference says what they are
	}
	ind := c.indent(c.pos)
	if ind != 0 || !c.isKeyLine(c.pos) {
		return nil, false
	}
	if !c.mapping(0, c.pos) || !c.skipBlank() || c.pos < len(doc) {
		return nil, false
	}
	if cap(c.tmp) > MaxKeptScratch {
		c.tmp = nil
	}
	if cap(c.sbuf) > MaxKeptScratch {
		c.sbuf = nil
	}
	return c.out, true
}

// yamlPrintable reports whether every character of doc is one the reference's
// reader accepts and the fast path handles: printable ASCII, tab, line feed,
// and the non-ASCII characters YAML allows except those YAML 1.1 treats as
// line breaks (U+0085, U+2028, U+2029) and the byte order mark.
func yamlPrintable(doc []byte) bool {
	i := 0
	for {
		// 8 bytes at a time while they are all printable ASCII, tab or
		// line feed: first the cheap test (printable ASCII only, which
		// long lines pass), then the exact one.
		for i+8 <= len(doc) {
			w := binary.LittleEndian.Uint64(doc[i:])
			if ((w-0x20*lo8)|(w+0x01*lo8)|w)&hi8 != 0 && notPlain(w) != 0 {
				break
			}
			i += 8
		}
		if i >= len(doc) {
			return true
		}
		end := min(i+8, len(doc))
		for i < end {
			c := doc[i]
			switch {
			case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
				i++
			case c < 0x80:
				return false
			default:
				r, size := utf8.DecodeRune(doc[i:])
				if r == utf8.RuneError && size <= 1 {
					return false
				}
				if !(r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000) ||
					r == 0x2028 || r == 0x2029 || r == 0xFEFF {
					return false
				}
				i += size
				if i > end {
					end = i
				}
			}
		}
	}
}

// notPlain marks (high bit) the bytes of w that are not printable ASCII
// (0x20 to 0x7e), a tab or a line feed. The tests are exact per byte: each
// sum is of a byte below 0x80 and a constant below 0x80, so no carry crosses
// into the next byte.
func notPlain(w uint64) uint64 {
	low := w & (0x7f * lo8)
	ge20 := low + 0x60*lo8 // high bit: >= 0x20
	del := low + 0x01*lo8  // high bit: 0x7f
	ge09 := low + 0x77*lo8 // high bit: >= 0x09
	ge0b := low + 0x75*lo8 // high bit: >= 0x0b
	return (w | del | ^(ge20 | (ge09 &^ ge0b))) & hi8
}

// indent returns the number of spaces at the start of the line at p.
func (c *YAMLConverter) indent(p int) int {
	n := 0
	for p+n+8 <= len(c.src) {
		// Block scalars of embedded JSON are deeply indented: 8 at a time.
		w := binary.LittleEndian.Uint64(c.src[p+n:]) ^ (' ' * lo8)
		if w != 0 {
			return n + bits.TrailingZeros64(w)/8
		}
		n += 8
	}
	for p+n < len(c.src) && c.src[p+n] == ' ' {
		n++
	}
	return n
}

// lineEnd returns the offset of the '\n' ending the line that holds p, or len(src).
func (c *YAMLConverter) lineEnd(p int) int {
	if j := bytes.IndexByte(c.src[p:], '\n'); j >= 0 {
		return p + j
	}
	return len(c.src)
}

// nextLine returns the start of the line after the one holding p.
func (c *YAMLConverter) nextLine(p int) int {
	e := c.lineEnd(p)
	if e < len(c.src) {
		return e + 1
	}
	return e
}

// blankOrComment reports whether the line at p holds only spaces and maybe a
// comment; false on a tab in its indentation (the fast path declines those).
func (c *YAMLConverter) blankOrComment(p int) (blank, ok bool) {
	q := p + c.indent(p)
	if q >= len(c.src) || c.src[q] == '\n' || c.src[q] == '#' {
		return true, true
	}
	return false, c.src[q] != '\t'
}

// skipBlank moves pos past blank and comment lines. It is false on a line
// the fast path does not handle (tabs in indentation, document markers,
// directives).
func (c *YAMLConverter) skipBlank() bool {
	for c.pos < len(c.src) {
		blank, ok := c.blankOrComment(c.pos)
		if !ok {
			return false
		}
		if !blank {
			s := c.src[c.pos:]
			if bytes.HasPrefix(s, []byte("---")) || bytes.HasPrefix(s, []byte("...")) || s[0] == '%' {
				return false
			}
			return true
		}
		c.pos = c.nextLine(c.pos)
	}
	return true
}

// isKeyLine reports whether the text at p starts a mapping entry ("key:"
// followed by a space or the end of the line).
func (c *YAMLConverter) isKeyLine(p int) bool {
	_, e, ok := c.key(p)
	return ok && e > 0
}

// key parses the key at p. It returns the decoded key, the offset just after
// its ':' and ok; e == 0 with ok means "not a key" (a scalar), !ok means the
// fast path declines.
func (c *YAMLConverter) key(p int) (k []byte, e int, ok bool) {
	s := c.src
	switch s[p] {
	case '"', '\'':
		le := c.lineEnd(p)
		var v []byte
		var q int
		if s[p] == '"' {
			v, q, ok = c.doubleQuoted(p, le, nil)
		} else {
			v, q, ok = c.singleQuoted(p, le, nil)
		}
		if !ok {
			return nil, 0, true // a multi-line quoted scalar: not a key
		}
		for q < le && s[q] == ' ' {
			q++
		}
		if q < le && s[q] == ':' && (q+1 == len(s) || s[q+1] == ' ' || s[q+1] == '\n') {
			return bytes.Clone(v), q + 1, true
		}
		return nil, 0, true
	case '-', '?', ':':
		if p+1 >= len(s) || s[p+1] == ' ' || s[p+1] == '\n' {
			return nil, 0, s[p] == '-' // "- " is a sequence entry, "? " and ": " are declined
		}
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`', '\t':
		return nil, 0, s[p] == '[' || s[p] == '{' || s[p] == '|' || s[p] == '>'
	}
	odd := false
	for q := p; q < len(s); q++ {
		if keyByte[s[q]] == 0 {
			continue // the usual case: a letter, digit, '.', '-', '/', ...
		}
		switch s[q] {
		case '\n':
			return nil, 0, true
		case ':':
			if q+1 == len(s) || s[q+1] == ' ' || s[q+1] == '\n' {
				k := s[p:q]
				if odd || q-p > 1000 || bytes.IndexByte(k, '\t') >= 0 || k[len(k)-1] == ' ' {
					return nil, 0, false // long keys, spaces before ':': leave them to the reference
				}
				if kind, _, _, _ := resolvePlain(k); kind != plainStr || string(k) == "<<" {
					return nil, 0, false // non-string keys
				}
				return k, q + 1, true
			}
		case '#':
			if s[q-1] == ' ' {
				return nil, 0, true
			}
		case '"', '\\', '\'', '\t', '{', '}', '[', ']', ',':
			// Legal in plain keys, but never in the regular shape:
			// such a key is left to the reference.
			odd = true
		}
	}
	return nil, 0, true
}

// keyByte marks the bytes key must look at: those that end or complicate a
// plain key.
var keyByte = func() (t [256]byte) {
	for _, c := range []byte("\n:#\"\\'\t{}[],") {
		t[c] = 1
	}
	return t
}()

// mapping parses a block mapping whose entries start at column ind; the first
// key is at p (on the current line, which may start with "- ").
func (c *YAMLConverter) mapping(ind, p int) bool {
	base := len(c.mem)
	objStart := len(c.out)
	c.out = append(c.out, '{')
	for {
		k, e, ok := c.key(p)
		if !ok || e == 0 {
			return false
		}
		if len(c.mem) > base {
			c.out = append(c.out, ',')
		}
		ms := len(c.out)
		c.out = appendJSONString(c.out, k)
		c.out = append(c.out, ':')
		vs := len(c.out)
		if !c.value(e, ind, true) {
			return false
		}
		c.mem = append(c.mem, member{key: k, start: ms, vstart: vs, end: len(c.out)})
		q, more, ok := c.nextEntry(ind)
		if !ok {
			return false
		}
		if !more {
			break
		}
		p = q
	}
	c.out = append(c.out, '}')
	return c.order(base, objStart)
}

// order checks the keys of the mapping just written (members from base, text
// from objStart) and sorts them as encoding/json sorts map keys; duplicate
// keys are left to the reference.
func (c *YAMLConverter) order(base, objStart int) bool {
	ms := c.mem[base:]
	sorted := true
	for i := 1; i < len(ms); i++ {
		switch bytes.Compare(ms[i-1].key, ms[i].key) {
		case 0:
			return false
		case 1:
			sorted = false
		}
	}
	if !sorted {
		sort.Slice(ms, func(i, j int) bool { return bytes.Compare(ms[i].key, ms[j].key) < 0 })
		for i := 1; i < len(ms); i++ {
			if bytes.Equal(ms[i-1].key, ms[i].key) {
				return false
			}
		}
		c.tmp = append(c.tmp[:0], c.out[objStart:]...)
		c.out = append(c.out[:objStart], '{')
		for i, m := range ms {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.tmp[m.start-objStart:m.end-objStart]...)
		}
		c.out = append(c.out, '}')
	}
	if objStart == 0 { // the document's object
		c.Top = c.Top[:0]
		at := 1
		for _, m := range ms {
			c.Top = append(c.Top, Field{Key: string(m.key), Start: at + m.vstart - m.start, End: at + m.end - m.start})
			at += m.end - m.start + 1
		}
	}
	c.mem = c.mem[:base]
	return true
}

// nextEntry moves pos to the next line that is not blank and says whether it
// continues the collection at column ind (more, with q its first character);
// ok is false on an unexpected indentation.
func (c *YAMLConverter) nextEntry(ind int) (q int, more, ok bool) {
	if !c.skipBlank() {
		return 0, false, false
	}
	if c.pos >= len(c.src) {
		return 0, false, true
	}
	m := c.indent(c.pos)
	if m > ind {
		return 0, false, false
	}
	return c.pos + m, m == ind, true
}

// sequence parses a block sequence whose "-" are at column ind; the current
// line is its first entry.
func (c *YAMLConverter) sequence(ind int) bool {
	c.out = append(c.out, '[')
	for n := 0; ; n++ {
		if n > 0 {
			c.out = append(c.out, ',')
		}
		p := c.pos + ind + 1 // after '-'
		if !c.value(p, ind, false) {
			return false
		}
		q, more, ok := c.nextEntry(ind)
		if !ok {
			return false
		}
		if !more {
			break
		}
		if c.src[q] != '-' || (q+1 < len(c.src) && c.src[q+1] != ' ' && c.src[q+1] != '\n') {
			break // the next entry of the mapping holding an indentless sequence
		}
	}
	c.out = append(c.out, ']')
	return true
}

// value parses the value that follows a mapping key's ':' or a sequence's
// '-' at p. ind is the column of the key or of the '-'; inMap says which.
// On return pos is at the start of the line after the value.
func (c *YAMLConverter) value(p, ind int, inMap bool) bool {
	s := c.src
	for p < len(s) && s[p] == ' ' {
		p++
	}
	if p >= len(s) || s[p] == '\n' || s[p] == '#' {
		if p < len(s) && s[p] == '#' && s[p-1] != ' ' {
			return false
		}
		// The value is on the next lines, or null.
		c.pos = c.nextLine(p)
		if !c.skipBlank() {
			return false
		}
		if c.pos < len(s) {
			m := c.indent(c.pos)
			q := c.pos + m
			isDash := s[q] == '-' && (q+1 == len(s) || s[q+1] == ' ' || s[q+1] == '\n')
			switch {
			case m > ind:
				return c.node(m, ind)
			case m == ind && inMap && isDash:
				return c.sequence(ind)
			}
		}
		c.out = append(c.out, "null"...)
		return true
	}
	if s[p-1] != ' ' && s[p-1] != '-' {
		return false // "key:\t" and the like
	}
	if !inMap {
		// "- key: value": a compact mapping at the key's column;
		// "- - x": a compact sequence (declined).
		if s[p] == '-' && (p+1 == len(s) || s[p+1] == ' ' || s[p+1] == '\n') {
			return false
		}
		_, e, ok := c.key(p)
		if !ok {
			return false
		}
		if e > 0 {
			return c.mapping(p-c.pos, p)
		}
	}
	return c.scalar(p, ind)
}

// node parses a block node that starts on the line at pos, at column m, below
// a key or '-' at column ind.
func (c *YAMLConverter) node(m, ind int) bool {
	p := c.pos + m
	s := c.src
	if s[p] == '-' && (p+1 == len(s) || s[p+1] == ' ' || s[p+1] == '\n') {
		return c.sequence(m)
	}
	_, e, ok := c.key(p)
	if !ok {
		return false
	}
	if e > 0 {
		return c.mapping(m, p)
	}
	switch s[p] {
	case '|', '>':
		return false // a block scalar on its own line: rare, left to the reference
	}
	return c.scalar(p, ind)
}
