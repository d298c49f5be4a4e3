package fbc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// setMaxDocumentSize lowers the one-document limit for a test.
func setMaxDocumentSize(t testing.TB, n int) {
	old := maxDocumentSize
	maxDocumentSize = n
	t.Cleanup(func() { maxDocumentSize = old })
}

// pkgDoc is an olm.package document of about n bytes.
func pkgDoc(name string, n int) string {
	d := `{"schema":"olm.package","name":"` + name + `","description":"`
	return d + strings.Repeat("x", max(0, n-len(d)-2)) + `"}`
}

func TestLoadDocumentSizeLimit(t *testing.T) {
	const limit = 64 << 10
	tests := []struct {
		name     string
		file     string
		wantLine int // 0: loads
	}{
		{"small documents", pkgDoc("a", 100) + "\n" + pkgDoc("b", 100), 0},
		{"just under the limit", pkgDoc("a", limit-1), 0},
		{"many documents over the limit in total", strings.Repeat(pkgDoc("a", limit/2)+"\n", 8), 0},
		{"over the limit", pkgDoc("a", limit+1), 1},
		{"second document over the limit", pkgDoc("a", 100) + "\n\n" + pkgDoc("b", 3*limit), 3},
		{"over the limit, indented", "{\n  \"schema\": \"olm.package\",\n  \"name\": \"a\",\n  \"description\": \"" + strings.Repeat("y", 2*limit) + "\"\n}", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setMaxDocumentSize(t, limit)
			fsys := fstest.MapFS{"cat/catalog.json": {Data: []byte(tc.file)}}
			_, err := Load(context.Background(), fsys, LoadOptions{})
			if tc.wantLine == 0 {
				if errors.Is(err, ErrDocumentTooLarge) {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var le *LoadError
			if !errors.Is(err, ErrDocumentTooLarge) || !errors.As(err, &le) {
				t.Fatalf("error = %v, want ErrDocumentTooLarge in a LoadError", err)
			}
			if le.File != "cat/catalog.json" || le.Line != tc.wantLine || !strings.Contains(err.Error(), "larger than 64.0 KiB, the most one catalog document may hold") {
				t.Fatalf("error = %q (file %q line %d), want cat/catalog.json line %d", err, le.File, le.Line, tc.wantLine)
			}
		})
	}
}

// splitAll returns the documents of data as jsonStream splits them, starting
// from a buffer of bufSize bytes.
func splitAll(data []byte, bufSize int) ([]string, error) {
	s := &jsonStream{r: bytes.NewReader(data), buf: make([]byte, bufSize)}
	var docs []string
	for {
		d, _, err := s.next()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, string(d))
	}
}

// FuzzJSONStreamLimit checks the document splitter under the size limit: it
// never returns a document over the limit, and splits documents under the limit exactly as it does
// without one.
func FuzzJSONStreamLimit(f *testing.F) {
	for _, s := range []string{
		`{"a":1}{"b":2}`, `{"a":"}"}` + "\n" + `{"b":[1,{"c":"\"}"}]}`, `{"a":"` + strings.Repeat("x", 300) + `"}`,
		`  {}  {}`, `{"a":`, `[1]`, `{"a":"\\"}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := splitAll(data, 1<<20)
		setMaxDocumentSize(t, 128)
		got, err := splitAll(data, 16)
		for _, d := range got {
			if len(d) > 128 {
				t.Fatalf("document of %d bytes returned under a 128-byte limit", len(d))
			}
		}
		if errors.Is(err, ErrDocumentTooLarge) {
			if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
				t.Fatalf("documents before the refusal differ: %q vs %q", got, want)
			}
			return
		}
		if (err == nil) != (wantErr == nil) || !slices.Equal(got, want) {
			t.Fatalf("with the limit: %q, %v; without: %q, %v", got, err, want, wantErr)
		}
	})
}
