package fbc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// referenceJSON is what Load made of a YAML document before the fast path:
// sigs.k8s.io/yaml's YAMLToJSON with HTML characters unescaped.
func referenceJSON(doc []byte) ([]byte, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	return scan.UnescapeHTML(j), nil
}

// checkFast converts doc with the fast path and, when it accepts it, compares
// with the reference. It reports whether the fast path accepted the document.
func checkFast(t testing.TB, yc *scan.YAMLConverter, doc []byte) bool {
	t.Helper()
	got, ok := yc.Convert(doc)
	if !ok {
		return false
	}
	want, err := referenceJSON(doc)
	if err != nil {
		t.Fatalf("fast path accepted a document the reference refuses (%v):\n%s", err, doc)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("fast path and reference differ on\n%s\nfast: %s\nref:  %s", doc, got, want)
	}
	// The members it hands to the decoder are those objectFields finds.
	fields, _, err := scan.ObjectFields(got, 0, nil)
	if err != nil {
		t.Fatalf("fast path wrote invalid JSON (%v): %s", err, got)
	}
	if fmt.Sprint(fields) != fmt.Sprint(yc.Top) {
		t.Fatalf("fast path's members %v, objectFields's %v, in %s", yc.Top, fields, got)
	}
	return true
}

// yamlDocs splits a YAML stream into documents as Load does.
func yamlDocs(t testing.TB, data []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	ys := newYAMLStream(bytes.NewReader(data))
	for {
		text, _, _, err := ys.next()
		if err == io.EOF {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, bytes.Clone(text))
	}
}

func TestYAMLFastCases(t *testing.T) {
	accepted := []string{
		"schema: olm.package\nname: foo\n",
		"b: 1\na: 2\n",                     // keys sorted as encoding/json does
		"a:\n  - x\n  - y\nb:\n- 1\n- 2\n", // indented and indentless sequences
		"a: yes\nb: No\nc: ~\nd: null\ne:\nf: 0x1F\ng: 1_000\nh: -0b101\ni: 1.5\nj: 1e3\nk: .5\nl: 2001-12-14\nm: 12345678901234567890\nn1: +12\no1: 0o17\np: 017\nq: 1e400\nr: 2001-12-14T21:59:43.10-05:00\ns: -.5e-7\nt: 100000000000000000000000\n",
		"a: 'it''s'\nb: \"tab\\there \\u00e9 \\x41 \\\" \\\\\"\n",
		"a: plain text\n  folded over\n\n  lines\n",
		"a: \"double\n  folded\n\n  again \\\n  joined\"\n",
		"a: 'single\n  folded  \n  x'\n",
		"a: |\n  literal\n   more\n\n  end\n\n\nb: |-\n  strip\n\nc: |+\n  keep\n\n\nd: |2-\n    indented\ne: >\n  folded\n  text\n\n   more\n  last\n",
		"a: {}\nb: []\n# comment\nc: x # trailing\n",
		"- not a mapping\n",
		"a:\n- b: 1\n  c:\n  - d\n  e: |\n    x\n- f: <&>\n",
		"a: x:y\nb: http://q/x:1#frag\n",
		"a: \"\\ud800\"\n", "a: !!str 1\n", "a: &x 1\nb: *x\n", "a: [1, 2]\n", "? a\n: b\n",
		"a: 1\na: 2\n", "1: a\n", "y: a\n", "a: .nan\n", "<<: {a: 1}\n", "a:\tb\n", "a: b: c\n",
		"a: |\n  no final line break", "a: \"unterminated\n", "a:\n  - x\n  y: 1\n", "a: 1\n b: 2\n",
		"a: é ü 😀\nb: \"\\N\\_\\L\\P\"\n", "\xef\xbb\xbfa: 1\n", "a: \x01\n", "a: b\r\n",
		"%YAML 1.1\n---\na: 1\n", "a: 1\n...\n", "a: -\n", "a: - b\n", "a:\n  -\n  - x\n",
	}
	var yc scan.YAMLConverter
	for _, doc := range accepted {
		checkFast(t, &yc, []byte(doc))
	}
	// The regular shape must take the fast path.
	for _, doc := range accepted[:13] {
		if _, ok := yc.Convert([]byte(doc)); !ok && doc != "- not a mapping\n" {
			t.Errorf("fast path declined a regular document:\n%s", doc)
		}
	}
}

// TestYAMLFastRealCatalogs compares the fast path with the reference on every
// YAML document of the real catalogs, and on every document of every catalog
// rendered as YAML (the shape of `opm render -o yaml`).
func TestYAMLFastRealCatalogs(t *testing.T) {
	ctx := context.Background()
	var yc scan.YAMLConverter
	for _, rel := range realCatalogs {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			dir := realCatalogRoot(t, rel)
			if (testing.Short() || ioRaceDetector) && catalogSize(t, dir) >= 3<<20 {
				t.Skip("multi-megabyte catalog skipped with -short or -race")
			}
			total, fast := 0, 0
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
					return err
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				for _, doc := range yamlDocs(t, data) {
					total++
					if checkFast(t, &yc, doc) {
						fast++
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			c, err := LoadDir(ctx, dir, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Render(ctx, c, &buf, FormatYAML); err != nil {
				t.Fatal(err)
			}
			rendered, renderedFast := 0, 0
			for _, doc := range yamlDocs(t, buf.Bytes()) {
				rendered++
				if checkFast(t, &yc, doc) {
					renderedFast++
				}
			}
			t.Logf("source YAML documents: %d, fast path %d; rendered YAML documents: %d, fast path %d", total, fast, rendered, renderedFast)
			if fast < total || renderedFast < rendered {
				t.Errorf("the fast path declined %d source and %d rendered documents", total-fast, rendered-renderedFast)
			}
		})
	}
}

// oldYAMLStream is the line-by-line splitter yamlStream replaced, kept as the
// reference of TestYAMLStreamSplits.
func oldYAMLSplit(data []byte) (docs []string, offs []int64, lines []int) {
	var doc []byte
	off, line := int64(0), 1
	start, startLine := off, line
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		isSep := (len(doc) == 0 || doc[len(doc)-1] == '\n') && bytes.HasPrefix(l, []byte("---")) && len(bytes.TrimSpace(l[3:])) == 0
		off += int64(len(l))
		if l[len(l)-1] == '\n' {
			line++
		}
		if isSep {
			if len(bytes.TrimSpace(doc)) > 0 {
				docs, offs, lines = append(docs, string(doc)), append(offs, start), append(lines, startLine)
			}
			doc = doc[:0]
			start, startLine = off, line
			continue
		}
		doc = append(doc, l...)
	}
	if len(bytes.TrimSpace(doc)) > 0 {
		docs, offs, lines = append(docs, string(doc)), append(offs, start), append(lines, startLine)
	}
	return
}

// smallReader returns at most n bytes per Read, to exercise buffer refills.
type smallReader struct {
	r io.Reader
	n int
}

func (s smallReader) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), s.n)]) }

func FuzzYAMLStreamSplits(f *testing.F) {
	for _, s := range []string{"a: 1\n---\nb: 2\n", "---\n---  \n--- x\n---\ta\n---\n", "a\n--", "---", "x\n---\n\n\n", "-- -\n---\r\n---\x85\nz", ""} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		wantDocs, wantOffs, wantLines := oldYAMLSplit(data)
		ys := newYAMLStream(smallReader{bytes.NewReader(data), int(chunk%7) + 1})
		ys.buf = make([]byte, 4)
		for i := 0; ; i++ {
			doc, off, line, err := ys.next()
			if err == io.EOF {
				if i != len(wantDocs) {
					t.Fatalf("%d documents, want %d", i, len(wantDocs))
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if i >= len(wantDocs) || string(doc) != wantDocs[i] || off != wantOffs[i] || line != wantLines[i] {
				t.Fatalf("document %d: %q at %d line %d; want %q", i, doc, off, line, wantDocs)
			}
		}
		if ys.off != int64(len(data)) {
			t.Fatalf("read %d bytes, want %d", ys.off, len(data))
		}
	})
}

// TestKeepBelow: with ElideHeavy, a catalog of at most KeepBelow bytes keeps
// its heavy values; a larger one has them elided; both render the same bytes.
func TestKeepBelow(t *testing.T) {
	files := map[string]string{
		"foo/catalog.yaml": "schema: olm.package\nname: foo\n---\nschema: olm.bundle\nname: foo.v1\npackage: foo\nimage: q/foo:1\nproperties:\n- type: olm.bundle.object\n  value:\n    data: eyJraW5kIjoiQ29uZmlnTWFwIn0=\n- type: olm.csv.metadata\n  value:\n    displayName: Foo <&>\n",
	}
	var out [2]bytes.Buffer
	for i, keep := range []int64{1 << 20, 10} {
		c, err := loadMap(t, files, LoadOptions{ElideHeavy: true, KeepBelow: keep})
		if err != nil {
			t.Fatal(err)
		}
		b := c.Packages[0].Bundles[0]
		if got, want := b.Elided(0), keep == 10; got != want {
			t.Errorf("KeepBelow %d: Elided(0) = %v, want %v", keep, got, want)
		}
		if err := Render(context.Background(), c, &out[i], FormatJSON); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		t.Errorf("kept and elided values render differently:\n%s\n%s", out[0].Bytes(), out[1].Bytes())
	}
}
