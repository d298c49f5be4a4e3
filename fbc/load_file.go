package fbc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// fileLoader parses files; one per worker, so its buffers are reused.
type fileLoader struct {
	fsys  fs.FS
	elide bool
	dd    docDecoder
	yc    scan.YAMLConverter
	buf   []byte
}

// loadFile parses one file. It returns the documents and the number of bytes read.
func (fl *fileLoader) loadFile(ctx context.Context, name, shown string) ([]parsedDoc, int64, error) {
	f, err := fl.fsys.Open(name)
	if err != nil {
		return nil, 0, &LoadError{File: shown, Index: -1, Err: err}
	}
	defer f.Close()
	fl.dd.elide = fl.elide
	if fl.buf == nil {
		fl.buf = make([]byte, 256<<10)
	}
	s := &jsonStream{r: f, buf: fl.buf}
	// Sniff like Kubernetes' YAMLOrJSONDecoder: JSON if the first non-space byte is '{'.
	first, err := s.firstByte()
	if err != nil {
		return nil, 0, &LoadError{File: shown, Index: -1, Err: err}
	}
	if first == 0 {
		return nil, s.base + int64(s.end), nil // empty or only space
	}
	if first != '{' {
		// YAML: continue from the bytes already read.
		docs, n, err := fl.loadYAML(ctx, io.MultiReader(bytes.NewReader(s.buf[:s.end]), f), name, shown)
		fl.buf = s.buf
		return docs, n, err
	}
	src := &docSource{fsys: fl.fsys}
	var docs []parsedDoc
	for idx := 0; ; idx++ {
		if idx%64 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		doc, off, err := s.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *scan.SyntaxError
			line, col := 0, 0
			if errors.As(err, &se) {
				line, col = lineAt(fl.fsys, name, int64(se.Off))
			}
			return nil, 0, &LoadError{File: shown, Index: idx, Line: line, Column: col, Err: err}
		}
		d, err := fl.dd.decode(doc)
		if err != nil {
			// Point at the syntax error, or at the value of the field in error.
			at := int64(-1)
			var se *scan.SyntaxError
			var fe *fieldError
			if errors.As(err, &se) {
				at = off + int64(se.Off)
			} else if errors.As(err, &fe) {
				if i := fieldOffset(doc, fe.path); i >= 0 {
					at = off + int64(i)
				}
			}
			if at < 0 {
				line, _ := lineAt(fl.fsys, name, off)
				return nil, 0, &LoadError{File: shown, Index: idx, Line: line, Err: err}
			}
			line, col := lineAt(fl.fsys, name, at)
			return nil, 0, &LoadError{File: shown, Index: idx, Line: line, Column: col, Err: err}
		}
		setOrigin(d, Origin{File: name, Index: idx, Offset: off, Length: int64(len(doc))}, src)
		docs = append(docs, d)
	}
	fl.buf = s.buf
	return docs, s.base + int64(s.end), nil
}

func setOrigin(d parsedDoc, o Origin, src *docSource) {
	switch d.kind {
	case kindPackage:
		d.pkg.Origin = o
	case kindChannel:
		d.ch.Origin = o
	case kindBundle:
		d.b.Origin = o
		d.b.src = src
	case kindDeprecations:
		d.dep.Origin = o
	case kindMeta:
		d.meta.Origin = o
	}
}

// lineAt returns the 1-based line and column (in bytes) of byte offset off in
// the file name; 0, 0 if the file cannot be read.
func lineAt(fsys fs.FS, name string, off int64) (int, int) {
	f, err := fsys.Open(name)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	line, col := 1, 1
	buf := make([]byte, 64<<10)
	for off > 0 {
		n, err := f.Read(buf[:min(int64(len(buf)), off)])
		if k := bytes.Count(buf[:n], []byte{'\n'}); k > 0 {
			line += k
			col = n - bytes.LastIndexByte(buf[:n], '\n')
		} else {
			col += n
		}
		off -= int64(n)
		if err != nil {
			break
		}
	}
	return line, col
}

// fieldOffset returns the offset in doc of the value of the top-level member
// key of the document's object, -1 if there is none.
func fieldOffset(doc []byte, key string) int {
	i := scan.SkipSpace(doc, 0)
	fields, _, err := scan.ObjectFields(doc, i, nil)
	if err != nil {
		return -1
	}
	for _, f := range fields {
		if f.Key == key {
			return f.Start
		}
	}
	return -1
}
