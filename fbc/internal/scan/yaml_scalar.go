package scan

import (
	"bytes"
	"encoding/binary"
)

// The scalars of the fast YAML path (yaml_fast.go): plain scalars with their
// continuation lines, single- and double-quoted scalars with escapes and line
// folding, literal and folded block scalars. Each follows the scanner of
// go.yaml.in/yaml/v2 (what sigs.k8s.io/yaml uses) and declines what it does
// not follow exactly.

// scalar parses the scalar at p (not a key) whose continuation lines must be
// indented more than ind, writes its JSON, and moves pos to the next line.
func (c *YAMLConverter) scalar(p, ind int) bool {
	s := c.src
	var v []byte
	var q int
	var ok bool
	switch s[p] {
	case '"':
		v, q, ok = c.doubleQuoted(p, len(s), &ind)
	case '\'':
		v, q, ok = c.singleQuoted(p, len(s), &ind)
	case '|', '>':
		return c.blockScalar(p, ind)
	case '[', '{':
		if p+1 < len(s) && s[p+1] == s[p]+2 { // "[]" or "{}"
			c.out = append(c.out, s[p], s[p+1])
			return c.endOfLine(p + 2)
		}
		return false
	case '&', '*', '!', '%', '@', '`', ',', ']', '}', '#':
		return false
	case '-', '?', ':':
		if p+1 >= len(s) || s[p+1] == ' ' || s[p+1] == '\n' {
			return false
		}
		return c.plain(p, ind)
	default:
		return c.plain(p, ind)
	}
	if !ok {
		return false
	}
	c.out = appendJSONString(c.out, v)
	return c.endOfLine(q)
}

// endOfLine checks that only spaces and a comment follow q on its line and
// moves pos to the next line.
func (c *YAMLConverter) endOfLine(q int) bool {
	s := c.src
	sp := q
	for q < len(s) && s[q] == ' ' {
		q++
	}
	if q < len(s) && s[q] != '\n' && (s[q] != '#' || q == sp) {
		return false
	}
	c.pos = c.nextLine(q)
	return true
}

// plainStop reports whether the byte at q ends or complicates a plain scalar
// line: the start of ": ", of " #", or a tab.
func plainStop(s []byte, q int) bool {
	switch s[q] {
	case ':':
		return q+1 == len(s) || s[q+1] == ' ' || s[q+1] == '\n'
	case '#':
		return s[q-1] == ' '
	case '\t':
		return true
	}
	return false
}

// plainLine returns the end of the plain scalar text on the line from p (to
// '\n', " #" or the end), with trailing spaces removed, and where the line
// ends; ok is false on ": " and tabs.
func (c *YAMLConverter) plainLine(p int) (textEnd, lineEnd int, ok bool) {
	s := c.src
	// One pass to the line's end, stopping at the bytes that may end the
	// text (most lines have none): 8 bytes at a time over the first 64,
	// then, on a long line (base64 data), the vectorised byte searches.
	q, end, hit := p, min(p+64, len(s)), false
	for q+8 <= end {
		w := binary.LittleEndian.Uint64(s[q:])
		a, b, c, d := w^('\n'*lo8), w^(':'*lo8), w^('#'*lo8), w^('\t'*lo8)
		if ((a-lo8)&^a|(b-lo8)&^b|(c-lo8)&^c|(d-lo8)&^d)&hi8 != 0 {
			hit = true
			break
		}
		q += 8
	}
	if !hit && end < len(s) {
		lineEnd = len(s)
		if j := bytes.IndexByte(s[q:], '\n'); j >= 0 {
			lineEnd = q + j
		}
		line := s[q:lineEnd]
		if bytes.IndexByte(line, ':') < 0 && bytes.IndexByte(line, '#') < 0 && bytes.IndexByte(line, '\t') < 0 {
			return trimSpaceEnd(s, p, lineEnd), lineEnd, true
		}
	}
	for q < len(s) && plainLineByte[s[q]] == 0 {
		q++
	}
	le := -1
	for ; q < len(s) && s[q] != '\n'; q++ {
		if le < 0 && plainLineByte[s[q]] != 0 && plainStop(s, q) {
			if s[q] != '#' {
				return 0, 0, false
			}
			le = q
		}
	}
	lineEnd = q
	if le < 0 {
		le = lineEnd
	}
	return trimSpaceEnd(s, p, le), lineEnd, true
}

// trimSpaceEnd returns e moved back over the spaces that end s[p:e].
func trimSpaceEnd(s []byte, p, e int) int {
	for e > p && s[e-1] == ' ' {
		e--
	}
	return e
}

// plainLineByte marks the bytes plainLine stops at: the line's end and the
// bytes plainStop looks at.
var plainLineByte = func() (t [256]byte) {
	for _, c := range []byte("\n:#\t") {
		t[c] = 1
	}
	return t
}()

// plain parses a plain scalar at p, folding its continuation lines (indented
// more than ind).
func (c *YAMLConverter) plain(p, ind int) bool {
	s := c.src
	te, le, ok := c.plainLine(p)
	if !ok {
		return false
	}
	first := s[p:te]
	commented := te < le && bytes.IndexByte(s[te:le], '#') >= 0
	next := c.nextLine(le)
	if commented || next >= len(s) {
		c.pos = next
		return c.emitPlain(first)
	}
	// Continuation lines?
	v := first
	folded := false
	blanks := 0
	q := next
	for q < len(s) {
		m := c.indent(q)
		r := q + m
		if r >= len(s) || s[r] == '\n' {
			blanks++
			q = c.nextLine(q)
			continue
		}
		if m <= ind || s[r] == '#' {
			break
		}
		// Whatever starts the line is text (go-yaml ends a plain scalar
		// only at ": ", " #" and a less indented line).
		switch s[r] {
		case '\t':
			return false // content the fast path does not fold
		}
		te, le, ok := c.plainLine(r)
		if !ok {
			return false
		}
		if !folded {
			c.sbuf = append(c.sbuf[:0], first...)
			folded = true
		}
		if blanks == 0 {
			c.sbuf = append(c.sbuf, ' ')
		}
		for ; blanks > 0; blanks-- {
			c.sbuf = append(c.sbuf, '\n')
		}
		c.sbuf = append(c.sbuf, s[r:te]...)
		v = c.sbuf
		next = c.nextLine(le)
		q = next
		if te < le {
			break // a comment ends the scalar
		}
	}
	c.pos = next
	return c.emitPlain(v)
}

func (c *YAMLConverter) emitPlain(v []byte) bool {
	var ok bool
	c.out, ok = appendPlain(c.out, v)
	return ok
}

// blockScalar parses the literal ('|') or folded ('>') block scalar whose
// indicator is at p, below a key or '-' at column ind. It follows v2's
// scanner line by line: the content indentation is ind plus the header's
// digit, or that of the first non-empty line; clip, strip ('-') or keep ('+')
// decide the final line breaks.
func (c *YAMLConverter) blockScalar(p, ind int) bool {
	s := c.src
	literal := s[p] == '|'
	q := p + 1
	chomp, inc := 0, 0
	for k := 0; k < 2 && q < len(s); k++ {
		switch {
		case (s[q] == '+' || s[q] == '-') && chomp == 0:
			chomp = 1
			if s[q] == '-' {
				chomp = -1
			}
			q++
		case '1' <= s[q] && s[q] <= '9' && inc == 0:
			inc = int(s[q] - '0')
			q++
		}
	}
	if !c.endOfLine(q) {
		return false
	}
	q = c.pos
	ci := 0
	if inc > 0 {
		ci = ind + inc
	}
	// The leading blank lines, and the indentation when not given.
	var breaks int
	maxBlank := 0
	for {
		if q >= len(s) {
			return false // an empty or unterminated block scalar: rare
		}
		m := c.indent(q)
		if ci > 0 {
			m = min(m, ci)
		}
		r := q + m
		if r >= len(s) {
			return false // only spaces up to the end: rare
		}
		if s[r] == '\t' && (ci == 0 || m < ci) {
			return false
		}
		if r < len(s) && s[r] == '\n' {
			maxBlank = max(maxBlank, m)
			breaks++
			q = r + 1
			continue
		}
		if ci == 0 {
			ci = max(m, ind+1, 1)
			if maxBlank > m || m < ci {
				return false
			}
		} else if m < ci {
			return false // the scalar is empty
		}
		break
	}
	// A literal scalar is written escaped straight into out; a folded one
	// is built in sbuf first.
	b, brk := c.sbuf[:0], "\n"
	if literal {
		b, brk = append(c.out, '"'), `\n`
	}
	trailing := breaks // pending trailing line breaks
	leading := false   // a pending leading line break
	leadingBlank := false
	for {
		// q is at a line whose indentation is at least ci.
		r := q + ci
		trailingBlank := s[r] == ' ' || s[r] == '\t'
		if !literal && !leadingBlank && !trailingBlank && leading {
			if trailing == 0 {
				b = append(b, ' ')
			}
		} else if leading {
			b = append(b, brk...)
		}
		leading = false
		for ; trailing > 0; trailing-- {
			b = append(b, brk...)
		}
		leadingBlank = trailingBlank
		le := c.lineEnd(r)
		if le >= len(s) {
			return false // no line break after the last line: left to the reference
		}
		if literal {
			b = appendEscaped(b, s[r:le])
		} else {
			b = append(b, s[r:le]...)
		}
		leading = true
		q = le + 1
		// The blank lines after it, and whether the scalar goes on.
		more := false
		for q < len(s) {
			m := min(c.indent(q), ci)
			r := q + m
			if r < len(s) && s[r] == '\t' && m < ci {
				return false
			}
			if r < len(s) && s[r] == '\n' {
				trailing++
				q = r + 1
				continue
			}
			more = m == ci && r < len(s)
			break
		}
		if !more {
			break
		}
	}
	if chomp != -1 && leading {
		b = append(b, brk...)
	}
	if chomp == 1 {
		for ; trailing > 0; trailing-- {
			b = append(b, brk...)
		}
	}
	if literal {
		c.out = append(b, '"')
	} else {
		c.sbuf = b
		c.out = appendJSONString(c.out, b)
	}
	// pos: the first line after the content (blank lines may be skipped).
	c.pos = q
	return true
}
