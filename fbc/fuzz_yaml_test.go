package fbc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// The differential fuzzers of the fast YAML path: whatever document the fast
// path accepts, it must convert exactly as the reference (sigs.k8s.io/yaml's
// YAMLToJSON, what opm uses) does.

// FuzzYAMLFast feeds raw documents.
func FuzzYAMLFast(f *testing.F) {
	for _, s := range yamlFastSeeds {
		f.Add([]byte(s))
	}
	var yc scan.YAMLConverter
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkFast(t, &yc, doc)
	})
}

var yamlFastSeeds = []string{
	"schema: olm.package\nname: foo\n",
	"b: 1\na: [ ]\nc: {}\n",
	"a:\n  - x\n  - y\nb:\n- 1\n- {}\n",
	"a: yes\nb: 0x1F\nc: 1_0\nd: 1.5e3\ne: 2001-12-14\nf: ~\n",
	"a: 'it''s'\nb: \"t\\tx \\u00e9 \\x41\"\n",
	"a: plain\n  folded\n\n  lines # c\n",
	"a: \"double\n  folded\n\n  again \\\n  joined\"\n",
	"a: |\n  literal\n   more\n\n  end\nb: |-\n  x\nc: |+\n  y\n\nd: |2\n    z\ne: >\n  f\n  g\n\n   h\n",
	"a:\n- b: 1\n  c:\n  - d\n  e: |\n    x\n- f: <&>\n",
	"a: &x 1\nb: *x\n", "? a\n: b\n", "a: !!str 1\n", "1: a\n",
	"A: |\n ", "<<:", // found by the fuzzer
}

// FuzzCSVMetadataFast checks the fast olm.csv.metadata check: when it says a
// value decodes, encoding/json must decode it into csvMetadata.
func FuzzCSVMetadataFast(f *testing.F) {
	for _, s := range []string{
		`{"displayName":"x","installModes":[{"type":"OwnNamespace","supported":true}],"annotations":{"a":"b"}}`,
		`{"apiServiceDefinitions":{"owned":[{"containerPort":8443,"specDescriptors":[{"path":"p","value":{"x":[1]}}]}]}}`,
		`{"DISPLAYNAME":1}`, `{"keywords":["a",null,2]}`, `{"crdDescriptions":{"owned":[{"resources":[{"name":"n"}]}]}}`,
		`{"provider":{"name":"n","url":3}}`, `{"apiServiceDefinitions":{"owned":[{"containerPort":2147483648}]}}`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !validJSON(bytes.TrimSpace(raw)) {
			return
		}
		if decodesAs(bytes.TrimSpace(raw), csvMetadataType) {
			var m csvMetadata
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("fast check accepted %s, encoding/json says %v", raw, err)
			}
		}
	})
}

// fuzzBytes hands out the fuzzer's bytes as choices.
type fuzzBytes struct {
	b []byte
	i int
}

func (z *fuzzBytes) next() byte {
	if z.i >= len(z.b) {
		return 0
	}
	z.i++
	return z.b[z.i-1]
}

func (z *fuzzBytes) n(k int) int { return int(z.next()) % k }

var fuzzStrings = []string{
	"", "foo", "olm.package", "yes", "No", "on", "~", "null", "1", "-2", "0x1F", "0o17", "017", "1_000", "1.5", "1e3", ".5", "-.inf", ".nan",
	"2001-12-14", "2001-12-14T21:59:43.10-05:00", "a: b", "a #b", "#c", "- x", "x:y", "http://q/x:1", "'q'", `"d"`, "multi\nline\n",
	"trail ", " lead", "tab\there", "é😀", "<&>", `\`, "x\n\n y", "  ", "\n", "a\n", "a\n\n", "quay.io/op@sha256:0123abcd", ">=1.0.0 <2.0.0",
	"{}", "[]", "[a]", "&a", "*a", "!t", "|", ">", "%x", "@x", "`x", "a,b", "? x", ": x", "---", "...", "\u0085", "\u2028",
}

// fuzzValue builds a catalog-shaped value: a document with a schema, names,
// properties (some heavy), entries, and arbitrary nested data.
func fuzzValue(z *fuzzBytes, depth int) any {
	if depth > 4 {
		return fuzzString(z)
	}
	switch z.n(8) {
	case 0, 1:
		m := map[string]any{}
		for k := z.n(5); k > 0; k-- {
			m[fuzzKey(z)] = fuzzValue(z, depth+1)
		}
		return m
	case 2, 3:
		var l []any
		for k := z.n(4); k > 0; k-- {
			l = append(l, fuzzValue(z, depth+1))
		}
		return l
	case 4:
		return []bool{true, false}[z.n(2)]
	case 5:
		return []any{nil, 0, -7, 1.5, 1e21, 12345678901234567890.0}[z.n(6)]
	default:
		return fuzzString(z)
	}
}

func fuzzKey(z *fuzzBytes) string {
	keys := []string{"schema", "name", "package", "image", "properties", "type", "value", "data", "entries", "replaces", "skips", "description", "Name", "x-descriptors", "a b", "y", "1", "a:b", "k'", ""}
	return keys[z.n(len(keys))]
}

func fuzzString(z *fuzzBytes) string {
	switch z.n(4) {
	case 0:
		// base64 of random length, as in olm.bundle.object
		raw := make([]byte, z.n(200))
		for i := range raw {
			raw[i] = z.next()
		}
		return base64.StdEncoding.EncodeToString(raw)
	case 1:
		// random text over an alphabet of YAML-significant characters
		const alpha = " a:#-'\"\n\\\tb0.!&*{}[],|>é"
		var b strings.Builder
		for k := z.n(40); k > 0; k-- {
			i := z.n(len(alpha))
			b.WriteByte(alpha[i])
		}
		return strings.ToValidUTF8(b.String(), "x")
	default:
		return fuzzStrings[z.n(len(fuzzStrings))]
	}
}

// fuzzCatalogDoc builds a bundle-like document around random data.
func fuzzCatalogDoc(z *fuzzBytes) map[string]any {
	doc := map[string]any{"schema": []string{"olm.package", "olm.channel", "olm.bundle", "x.custom"}[z.n(4)], "name": fuzzString(z)}
	var props []any
	for k := z.n(4); k > 0; k-- {
		switch z.n(3) {
		case 0:
			props = append(props, map[string]any{"type": "olm.bundle.object", "value": map[string]any{"data": fuzzString(z)}})
		case 1:
			props = append(props, map[string]any{"type": "olm.csv.metadata", "value": fuzzValue(z, 1)})
		default:
			props = append(props, map[string]any{"type": fuzzString(z), "value": fuzzValue(z, 2)})
		}
	}
	doc["properties"] = props
	for k := z.n(3); k > 0; k-- {
		doc[fuzzKey(z)] = fuzzValue(z, 1)
	}
	return doc
}

// yamlEmitter writes a value as YAML in styles chosen by the fuzzer: keys in
// any order, indented or indentless sequences, every scalar style, comments
// and blank lines, folded lines. It writes correct YAML for most choices and
// deliberately odd YAML for some: both must agree with the reference.
type yamlEmitter struct {
	z   *fuzzBytes
	buf bytes.Buffer
}

func (e *yamlEmitter) pad(n int) { e.buf.WriteString(strings.Repeat(" ", n)) }

func (e *yamlEmitter) extras(ind int) {
	switch e.z.n(16) {
	case 0:
		e.pad(ind)
		e.buf.WriteString("# comment: - x\n")
	case 1:
		e.buf.WriteString("\n")
	case 2:
		e.pad(e.z.n(8))
		e.buf.WriteString("\n")
	}
}

// node writes v after a key or "- " (inline is true: same line), at indentation ind.
func (e *yamlEmitter) node(v any, ind int) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			e.buf.WriteString(" {}\n")
			return
		}
		e.buf.WriteString("\n")
		e.mapping(v, ind)
	case []any:
		if len(v) == 0 {
			e.buf.WriteString(" []\n")
			return
		}
		e.buf.WriteString("\n")
		if e.z.n(2) == 0 && ind >= 2 {
			ind -= 2 // indentless
		}
		for _, x := range v {
			e.extras(ind)
			e.pad(ind)
			e.buf.WriteString("-")
			e.node(x, ind+2)
		}
	default:
		e.buf.WriteString(" ")
		e.scalar(v, ind)
	}
}

func (e *yamlEmitter) mapping(m map[string]any, ind int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if e.z.n(3) == 0 {
		for i := len(keys) - 1; i > 0; i-- {
			j := e.z.n(i + 1)
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	for _, k := range keys {
		e.extras(ind)
		e.pad(ind)
		e.scalarKey(k)
		e.buf.WriteString(":")
		e.node(m[k], ind+2)
	}
}

func (e *yamlEmitter) scalarKey(k string) {
	switch e.z.n(4) {
	case 0:
		e.buf.WriteString(singleQuote(k))
	case 1:
		b, _ := json.Marshal(k)
		e.buf.Write(b)
	default:
		e.buf.WriteString(k)
	}
}

func singleQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// scalar writes a scalar that ends its line.
func (e *yamlEmitter) scalar(v any, ind int) {
	s, isStr := v.(string)
	if !isStr {
		b, _ := json.Marshal(v)
		e.buf.Write(b)
		e.buf.WriteString("\n")
		return
	}
	switch e.z.n(6) {
	case 0: // plain, maybe folded at spaces
		words := strings.Split(s, " ")
		for i, w := range words {
			if i > 0 {
				if e.z.n(3) == 0 {
					e.buf.WriteString("\n")
					if e.z.n(4) == 0 {
						e.buf.WriteString("\n")
					}
					e.pad(ind)
				} else {
					e.buf.WriteString(" ")
				}
			}
			e.buf.WriteString(w)
		}
		e.buf.WriteString("\n")
	case 1:
		e.buf.WriteString(singleQuote(s) + "\n")
	case 2: // double-quoted, maybe folded
		b, _ := json.Marshal(s)
		q := string(b)
		if i := strings.Index(q, " "); i > 0 && e.z.n(2) == 0 {
			q = q[:i] + "\n" + strings.Repeat(" ", ind) + q[i+1:]
		}
		e.buf.WriteString(q + "\n")
	case 3, 4: // literal or folded block
		e.buf.WriteString([]string{"|", ">"}[e.z.n(2)])
		e.buf.WriteString([]string{"", "-", "+", "2", "2-"}[e.z.n(5)])
		if e.z.n(4) == 0 {
			e.buf.WriteString(" # c")
		}
		e.buf.WriteString("\n")
		for _, l := range strings.SplitAfter(s, "\n") {
			if l != "" && l != "\n" {
				e.pad(ind)
			}
			e.buf.WriteString(l)
		}
		if !strings.HasSuffix(s, "\n") {
			e.buf.WriteString("\n")
		}
	default:
		e.buf.WriteString(s + "\n")
	}
}

// FuzzYAMLFastCatalog generates catalog-shaped documents, writes them as YAML
// with sigs.k8s.io/yaml (the shape of `opm render -o yaml`) and with
// yamlEmitter's styles, and checks the fast path against the reference on
// each; for the regular shape it also checks that the JSON is the value's.
// (TestYAMLFastRealCatalogs checks that the regular shape takes the fast path.)
func FuzzYAMLFastCatalog(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add(bytes.Repeat([]byte{7, 3, 1}, 40))
	var yc scan.YAMLConverter
	f.Fuzz(func(t *testing.T, data []byte) {
		z := &fuzzBytes{b: data}
		doc := fuzzCatalogDoc(z)
		j, err := json.Marshal(doc)
		if err != nil {
			return
		}
		regular, err := yaml.JSONToYAML(j)
		if err != nil {
			t.Fatal(err)
		}
		checkFast(t, &yc, regular)
		want, err := referenceJSON(regular)
		if err != nil {
			t.Fatalf("reference refuses its own output: %v\n%s", err, regular)
		}
		// go-yaml writes U+0085, U+2028 and U+2029 raw in quoted scalars
		// and reads them back as line breaks: its round trip changes them.
		breaks := bytes.Contains(j, []byte("\u0085")) || bytes.Contains(j, []byte(`\u2028`)) || bytes.Contains(j, []byte(`\u2029`))
		if !breaks {
			var a, b any
			if json.Unmarshal(want, &a) != nil || json.Unmarshal(scan.UnescapeHTML(j), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("round trip changed the value:\n%s\n%s", want, j)
			}
		}
		e := &yamlEmitter{z: z}
		e.mapping(doc, 0)
		checkFast(t, &yc, e.buf.Bytes())
	})
}
