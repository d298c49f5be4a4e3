package fbc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// This file reads YAML catalog files: a stream split into documents at "---"
// lines, each document converted to the JSON the JSON path decodes. The
// conversion is yamlConv's fast path (yaml_fast.go) when the document has the
// regular shape, else sigs.k8s.io/yaml's YAMLToJSON, the converter opm uses,
// which is the reference for both: the JSON bytes are the same either way.

// loadYAML parses a YAML multi-document stream.
func (fl *fileLoader) loadYAML(ctx context.Context, r io.Reader, name, shown string) ([]parsedDoc, int64, error) {
	src := &docSource{fsys: fl.fsys, yaml: true}
	var docs []parsedDoc
	ys := newYAMLStream(r)
	for idx := 0; ; {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		text, off, line, err := ys.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, &LoadError{File: shown, Index: idx, Line: line, Err: err}
		}
		d, ok, err := fl.decodeYAML(text)
		if err != nil {
			le := &LoadError{File: shown, Index: idx, Line: line, Err: err}
			yamlErrorPosition(le, text, err)
			return nil, 0, le
		}
		if !ok {
			continue // empty document
		}
		setOrigin(d, Origin{File: name, Index: idx, Offset: off, Length: int64(len(text))}, src)
		docs = append(docs, d)
		idx++
	}
	return docs, ys.off, nil
}

// yamlToJSON converts one YAML document to JSON as the reference converter
// does, with HTML characters unescaped (see unescapeHTML); nil for an empty
// document. The result is valid until the next call with the same yc. The
// fast path also returns the members of the document's object (see
// yamlConv.top), nil otherwise.
func yamlToJSON(yc *scan.YAMLConverter, text []byte) ([]byte, []scan.Field, error) {
	if j, ok := yc.Convert(text); ok {
		return j, yc.Top, nil
	}
	j, err := yaml.YAMLToJSON(text)
	if err != nil {
		return nil, nil, err
	}
	j = scan.UnescapeHTML(j)
	if t := bytes.TrimSpace(j); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil, nil
	}
	return j, nil, nil
}

// decodeYAML decodes one YAML document; ok is false for an empty document.
func (fl *fileLoader) decodeYAML(text []byte) (parsedDoc, bool, error) {
	j, top, err := yamlToJSON(&fl.yc, text)
	if err != nil {
		return parsedDoc{}, false, &yamlSyntaxError{err: err}
	}
	if j == nil {
		return parsedDoc{}, false, nil
	}
	fl.dd.trusted, fl.dd.known = true, top
	d, err := fl.dd.decode(j)
	fl.dd.trusted, fl.dd.known = false, nil
	if err != nil {
		var se *scan.SyntaxError
		if errors.As(err, &se) {
			return parsedDoc{}, false, fmt.Errorf("invalid document: %w", err)
		}
		return parsedDoc{}, false, err
	}
	return d, true, nil
}

// yamlSyntaxError is a document the YAML parser refused.
type yamlSyntaxError struct{ err error }

func (e *yamlSyntaxError) Error() string {
	return "invalid YAML: " + yamlLineRe.ReplaceAllString(e.err.Error(), "")
}

func (e *yamlSyntaxError) Unwrap() error { return e.err }

// yamlLineRe finds the line go-yaml reports, relative to the document.
var yamlLineRe = regexp.MustCompile(`(?:error converting YAML to JSON: )?yaml: line (\d+): `)

// yamlErrorPosition sets le's line (and column when known) from the error err
// about the document text that starts at le.Line.
func yamlErrorPosition(le *LoadError, text []byte, err error) {
	var ye *yamlSyntaxError
	if errors.As(err, &ye) {
		if m := yamlLineRe.FindStringSubmatch(ye.err.Error()); m != nil {
			if n, perr := strconv.Atoi(m[1]); perr == nil && n >= 1 {
				le.Line += n - 1
			}
		}
		return
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		// The line of the top-level key the field is under.
		if l, col, ok := topLevelKey(text, fe.path); ok {
			le.Line += l
			le.Column = col
		}
	}
}

// topLevelKey finds the line (0-based in text) of the top-level key k, and
// the column of its value.
func topLevelKey(text []byte, k string) (int, int, bool) {
	line := 0
	for p := 0; p < len(text); line++ {
		e := bytes.IndexByte(text[p:], '\n')
		if e < 0 {
			e = len(text) - p
		}
		l := text[p : p+e]
		if bytes.HasPrefix(l, []byte(k)) && len(l) > len(k) && l[len(k)] == ':' {
			col := len(k) + 2
			for col-1 < len(l) && l[col-1] == ' ' {
				col++
			}
			return line, col, true
		}
		p += e + 1
	}
	return 0, 0, false
}

// yamlStream splits a YAML stream into documents at lines that are "---"
// followed only by space, as Kubernetes' YAML reader does. It searches the
// buffered data for separators rather than reading line by line, and holds
// one document (plus a read buffer) at a time.
type yamlStream struct {
	r          io.Reader
	buf        []byte
	start, end int   // unread data: buf[start:end]
	off        int64 // offset of buf[start] in the stream (after next: of the next unread byte)
	line       int   // line of buf[start]
	eof        bool
}

func newYAMLStream(r io.Reader) *yamlStream {
	return &yamlStream{r: r, buf: make([]byte, 64<<10), line: 1}
}

// fill reads more data, keeping buf[start:end].
func (y *yamlStream) fill() error {
	if y.start > 0 {
		copy(y.buf, y.buf[y.start:y.end])
		y.end -= y.start
		y.start = 0
	}
	if y.end == len(y.buf) {
		nb := make([]byte, 2*len(y.buf))
		copy(nb, y.buf[:y.end])
		y.buf = nb
	}
	for {
		n, err := y.r.Read(y.buf[y.end:])
		y.end += n
		if err == io.EOF {
			y.eof = true
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

var docSep = []byte("---")

// separator reports whether the line at buf[p:] is a document separator; more
// is true when the line's end is not buffered yet.
func (y *yamlStream) separator(p int) (sep, more bool) {
	d := y.buf[p:y.end]
	if !bytes.HasPrefix(d, docSep) {
		return false, len(d) < len(docSep) && !y.eof && bytes.HasPrefix(docSep, d)
	}
	e := bytes.IndexByte(d, '\n')
	if e < 0 {
		if !y.eof {
			return false, true
		}
		e = len(d)
	}
	return len(bytes.TrimSpace(d[3:e])) == 0, false
}

// next returns the next document's text, offset and first line; io.EOF at the end.
// The text is valid until the next call.
func (y *yamlStream) next() ([]byte, int64, int, error) {
	for {
		// The document starts at buf[start], at the start of a line.
		p := y.start // where the next line starts
		for {
			sep, more := y.separator(p)
			if more {
				p -= y.start
				if err := y.fill(); err != nil {
					return nil, y.off, y.line, err
				}
				p += y.start
				continue
			}
			if sep {
				break
			}
			// Go to the next line that starts with "---".
			k := bytes.Index(y.buf[p:y.end], []byte("\n---"))
			if k >= 0 {
				p += k + 1
				continue
			}
			if y.eof {
				p = y.end
				break
			}
			// Read more, going on from the last line start.
			if j := bytes.LastIndexByte(y.buf[p:y.end], '\n'); j >= 0 {
				p += j + 1
			}
			p -= y.start
			if err := y.fill(); err != nil {
				return nil, y.off, y.line, err
			}
			p += y.start
		}
		doc := y.buf[y.start:p]
		off, line := y.off, y.line
		// Consume the document and its separator line.
		q := p
		if q < y.end {
			e := bytes.IndexByte(y.buf[q:y.end], '\n')
			if e < 0 {
				q = y.end
			} else {
				q += e + 1
			}
		}
		n := bytes.Count(y.buf[y.start:q], []byte{'\n'})
		y.off += int64(q - y.start)
		y.line += n
		y.start = q
		if len(bytes.TrimSpace(doc)) > 0 {
			return doc, off, line, nil
		}
		if q >= y.end && y.eof {
			return nil, 0, 0, io.EOF
		}
	}
}
