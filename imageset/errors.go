package imageset

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every FieldError that reports a mistake in a configuration
// file (syntax, unknown field, wrong type, bad value). Test with errors.Is.
var ErrInvalid = errors.New("invalid image set configuration")

// ErrNotSupported is wrapped by every FieldError that reports a field airlock parses but
// does not implement yet (mirror.platform, mirror.helm, mirror.samples).
// Test with errors.Is.
var ErrNotSupported = errors.New("not supported yet")

// FieldError is one problem found in a configuration file. Its Error() text is
// "FILE:LINE:COLUMN: FIELD: MESSAGE" (LINE and COLUMN are left out when unknown).
type FieldError struct {
	// File is the name given to Load (or the path given to LoadFile).
	File string
	// Line and Column are 1-based; 0 means unknown.
	Line, Column int
	// Field is the path of the offending field, e.g.
	// mirror.operators[0].packages[2].channels[0].minVersion ("" for the whole document).
	Field string
	// Msg says what is wrong and how to fix it.
	Msg string
	// Err is ErrInvalid or ErrNotSupported.
	Err error
}

// Error implements error.
func (e *FieldError) Error() string {
	var b strings.Builder
	file := e.File
	if file == "" {
		file = "<config>"
	}
	b.WriteString(file)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalid or ErrNotSupported.
func (e *FieldError) Unwrap() error { return e.Err }

// Errors is every problem found in one configuration file, sorted by position.
// Its Error() text has one FieldError per line. Load, LoadDelete and Validate return
// an Errors value (never an empty one); use errors.As to get at the individual problems.
type Errors []*FieldError

// Error implements error: one problem per line, each starting with FILE:LINE:.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is and errors.As look at every problem.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sorted returns es ordered by line and column (stable), or nil when empty.
func (es Errors) sorted() error {
	if len(es) == 0 {
		return nil
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Column < es[j].Column
	})
	if len(es) > maxReported {
		last := es[maxReported-1]
		more := &FieldError{File: last.File, Line: last.Line, Column: last.Column, Err: ErrInvalid,
			Msg: fmt.Sprintf("... and %d more problems; fix the ones above first", len(es)-maxReported)}
		es = append(es[:maxReported:maxReported], more)
	}
	return es
}

// maxReported is the number of problems shown for one file; maxCollected bounds the
// memory spent on a file full of mistakes.
const (
	maxReported  = 50
	maxCollected = 10_000
)

// position is a 1-based line and column in the source file.
type position struct{ line, col int }

// errorList collects FieldErrors for one file.
type errorList struct {
	file string
	errs Errors
	// bad holds the paths that already have an error: later checks skip them and
	// everything below them, so one mistake is reported once.
	bad map[string]bool
}

func (l *errorList) add(pos position, path string, cause error, format string, args ...any) {
	if l.bad == nil {
		l.bad = map[string]bool{}
	}
	l.bad[path] = true
	if len(l.errs) >= maxCollected {
		return
	}
	l.errs = append(l.errs, &FieldError{
		File:   l.file,
		Line:   pos.line,
		Column: pos.col,
		Field:  oneLine(path),
		Msg:    oneLine(fmt.Sprintf(format, args...)),
		Err:    cause,
	})
}

// covered reports whether path or one of its parents already has an error.
func (l *errorList) covered(path string) bool {
	for p := path; ; p = parentPath(p) {
		if l.bad[p] {
			return true
		}
		if p == "" {
			return false
		}
	}
}

// parentPath strips the last ".field" or "[i]" from a field path.
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

func joinPath(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// oneLine keeps a message on one line (it may quote user input).
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}
