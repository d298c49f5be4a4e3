package fbc

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
	"github.com/airlock-mirror/airlock/internal/humanize"
)

// maxDocumentSize bounds one JSON document (one top-level value) of a catalog
// file, so that a file holding one huge value cannot exhaust memory. The largest
// real document we know of is 4.8 MB (a bundle of shared/fixtures/large).
var maxDocumentSize = 64 << 20 // a variable so tests can lower it

// ErrDocumentTooLarge is returned (wrapped in a LoadError naming the file and
// line) for a JSON document larger than 64 MiB.
var ErrDocumentTooLarge = errors.New("JSON document too large")

// jsonStream splits a stream of concatenated JSON objects into documents
// without decoding them: it only tracks strings and bracket depth. The
// documents are validated by docDecoder afterwards.
type jsonStream struct {
	r          io.Reader
	buf        []byte
	start, pos int // start of the current document, scan position
	end        int // end of valid data in buf
	base       int64
	eof        bool
}

// fill reads more data, keeping buf[start:end].
func (s *jsonStream) fill() error {
	if s.start > 0 {
		copy(s.buf, s.buf[s.start:s.end])
		s.base += int64(s.start)
		s.pos -= s.start
		s.end -= s.start
		s.start = 0
	}
	if s.end == len(s.buf) {
		if s.end >= maxDocumentSize {
			return s.tooLarge()
		}
		nb := make([]byte, min(2*len(s.buf), maxDocumentSize))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err == io.EOF {
			s.eof = true
			return nil
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// tooLarge is the error for a document (starting at s.start) over maxDocumentSize.
func (s *jsonStream) tooLarge() error {
	return &scan.SyntaxError{Off: int(s.base) + s.start, Err: ErrDocumentTooLarge,
		Msg: fmt.Sprintf("the JSON document starting here is larger than %s, the most one catalog document may hold (the largest known real one is 4.8 MB); is this file really a catalog?", humanize.Bytes(int64(maxDocumentSize)))}
}

// firstByte returns the first non-space byte of the stream without consuming
// it, or 0 if there is none.
func (s *jsonStream) firstByte() (byte, error) {
	for {
		for s.pos < s.end && scan.IsSpace(s.buf[s.pos]) {
			s.pos++
		}
		if s.pos < s.end {
			return s.buf[s.pos], nil
		}
		if s.eof {
			return 0, nil
		}
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
}

// next returns the next document and its offset in the stream; io.EOF at the end.
// The document is valid until the next call.
func (s *jsonStream) next() ([]byte, int64, error) {
	s.start = s.pos // the previous document need not be kept
	c, err := s.firstByte()
	if err != nil {
		return nil, 0, err
	}
	if c == 0 {
		return nil, 0, io.EOF
	}
	s.start = s.pos
	if c != '{' {
		return nil, 0, scan.Errorf(int(s.base)+s.pos, "expected a JSON object, found %s", scan.KindOf(s.buf[s.pos:s.end]))
	}
	depth := 0
	inStr := false
	for {
		if s.pos >= s.end {
			if s.eof {
				return nil, 0, scan.Errorf(int(s.base)+s.start, "unexpected end of file inside the document (unterminated object)")
			}
			if s.pos-s.start >= maxDocumentSize {
				return nil, 0, s.tooLarge()
			}
			if err := s.fill(); err != nil {
				return nil, 0, err
			}
			continue
		}
		if inStr {
			j := bytes.IndexByte(s.buf[s.pos:s.end], '"')
			if j < 0 {
				s.pos = s.end
				continue
			}
			q := s.pos + j
			n := 0
			for k := q - 1; k > s.start && s.buf[k] == '\\'; k-- {
				n++
			}
			s.pos = q + 1
			if n%2 == 0 {
				inStr = false
			}
			continue
		}
		c := s.buf[s.pos]
		s.pos++
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if s.pos-s.start > maxDocumentSize {
					return nil, 0, s.tooLarge()
				}
				return s.buf[s.start:s.pos], s.base + int64(s.start), nil
			}
		}
	}
}
