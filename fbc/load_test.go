package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
)

// realCatalogs are the catalog roots of ../shared/fixtures/real-catalogs (see
// its SOURCES.md); tests that use them are skipped when the fixtures are absent.
var realCatalogs = []string{
	"community-operators-prod-v4.21/catalogs/v4.21",
	"community-operators-prod-v4.16/catalogs/v4.16",
	"securesign-rhtas-v4.20/v4.20",
	"kube-descheduler-v4.20/v4.20/catalog",
	"oc-mirror-testdata/tests/unit/testdata/configs",
	"oc-mirror-testdata/v1/test/e2e/artifacts/configs",
	"oc-mirror-testdata/tests/integration/image-builders/operator/catalogs/test-catalog-extra-blobs",
}

func realCatalogRoot(t testing.TB, rel string) string {
	t.Helper()
	base := os.Getenv("AIRLOCK_REAL_CATALOGS")
	if base == "" {
		return fixtures.Require(t, "real-catalogs/"+rel)
	}
	dir := filepath.Join(base, rel)
	if _, err := os.Stat(dir); err != nil {
		fixtures.Missing(t, "real catalog %s under $AIRLOCK_REAL_CATALOGS: %v", rel, err)
	}
	return dir
}

func catalogSize(t testing.TB, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return err
	})
	return n
}

// normalized returns a copy of the model without load positions and source
// references, so that catalogs loaded from different places compare equal.
func normalized(c *Catalog) *Catalog {
	out := &Catalog{}
	for _, m := range c.Others {
		m2 := *m
		m2.Origin = Origin{}
		out.Others = append(out.Others, &m2)
	}
	for _, p := range c.Packages {
		p2 := *p
		p2.Origin = Origin{}
		p2.Channels, p2.Bundles, p2.Deprecations, p2.Others = nil, nil, nil, nil
		for _, ch := range p.Channels {
			ch2 := *ch
			ch2.Origin = Origin{}
			p2.Channels = append(p2.Channels, &ch2)
		}
		for _, b := range p.Bundles {
			b2 := *b
			b2.Origin = Origin{}
			b2.src, b2.elided = nil, nil
			p2.Bundles = append(p2.Bundles, &b2)
		}
		for _, d := range p.Deprecations {
			d2 := *d
			d2.Origin = Origin{}
			p2.Deprecations = append(p2.Deprecations, &d2)
		}
		for _, m := range p.Others {
			m2 := *m
			m2.Origin = Origin{}
			p2.Others = append(p2.Others, &m2)
		}
		out.Packages = append(out.Packages, &p2)
	}
	return out
}

// canonicalValues re-encodes property values and blobs with encoding/json (keys
// sorted), in place.
func canonicalValues(t testing.TB, c *Catalog) *Catalog {
	canon := func(v []byte) []byte {
		if v == nil {
			return nil
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("invalid JSON value %.100s: %v", v, err)
		}
		out, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	props := func(ps []Property) {
		for i := range ps {
			ps[i].Value = canon(ps[i].Value)
		}
	}
	for _, m := range c.Others {
		m.Blob = canon(m.Blob)
	}
	for _, p := range c.Packages {
		props(p.Properties)
		for _, ch := range p.Channels {
			props(ch.Properties)
		}
		for _, b := range p.Bundles {
			props(b.Properties)
		}
		for _, m := range p.Others {
			m.Blob = canon(m.Blob)
		}
	}
	return c
}

//lint:ignore U1000 unused since the YAML load rewrite began; its owner decides whether it goes
func counts(c *Catalog) (pkgs, chans, bundles, props, nilProps int) {
	for _, p := range c.Packages {
		pkgs++
		chans += len(p.Channels)
		bundles += len(p.Bundles)
		for _, b := range p.Bundles {
			for _, pr := range b.Properties {
				props++
				if pr.Value == nil {
					nilProps++
				}
			}
		}
	}
	return
}

func TestRealCatalogsRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, rel := range realCatalogs {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			dir := realCatalogRoot(t, rel)
			if (testing.Short() || ioRaceDetector) && catalogSize(t, dir) >= 3<<20 {
				t.Skip("multi-megabyte catalog skipped with -short or -race")
			}
			formats := []string{"json", "yaml"}
			full, err := LoadDir(ctx, dir, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			light, err := LoadDir(ctx, dir, LoadOptions{ElideHeavy: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(full.Packages) == 0 {
				t.Fatal("no packages loaded")
			}
			for _, format := range formats {
				out := filepath.Join(t.TempDir(), "out")
				if err := Write(ctx, light, out, WriteOptions{Format: format}); err != nil {
					t.Fatal(err)
				}
				again, err := LoadDir(ctx, out, LoadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				want, got := normalized(full), normalized(again)
				if format == "yaml" {
					// YAML sorts the keys of every object: compare values by meaning.
					want, got = canonicalValues(t, want), canonicalValues(t, got)
				}
				if !reflect.DeepEqual(want, got) {
					t.Fatalf("%s: Load -> Write -> Load changed the model", format)
				}
				// Writing the elided and the full model gives the same bytes.
				var a, b bytes.Buffer
				if err := Render(ctx, light, &a, format); err != nil {
					t.Fatal(err)
				}
				if err := Render(ctx, full, &b, format); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatalf("%s: rendering the elided model differs from rendering the full model", format)
				}
			}
		})
	}
}

var _ = errors.Is
var _ = strings.Contains
var _ fstest.MapFS

func loadMap(t *testing.T, files map[string]string, opts LoadOptions) (*Catalog, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return Load(context.Background(), fsys, opts)
}

const pkgFoo = `{"schema":"olm.package","name":"foo","defaultChannel":"stable"}`

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error
	}{
		{"missing schema", map[string]string{"a.json": pkgFoo + "\n{\"name\":\"x\"}"}, []string{"a.json:2: document 1", "missing root schema field"}},
		{"empty schema", map[string]string{"a.json": `{"schema":""}`}, []string{"a.json:1: document 0", "missing root schema field"}},
		{"schema not string", map[string]string{"a.json": `{"schema":3}`}, []string{`expected value for key "schema" to be a string, got a number`}},
		{"name not string", map[string]string{"a.json": `{"schema":"olm.bundle","name":["x"]}`}, []string{`key "name" to be a string`}},
		{"case duplicate keys", map[string]string{"a.json": `{"schema":"olm.package","name":"a","Name":"b"}`}, []string{`duplicate keys for key "name"`}},
		{"top-level array", map[string]string{"a.json": `[{"schema":"olm.package"}]`}, []string{"a.json", "document 0"}},
		{"yaml list", map[string]string{"a.yaml": "- schema: olm.package\n"}, []string{"a.yaml:1: document 0", "not an object"}},
		{"yaml missing schema", map[string]string{"c.yaml": "---\nschema: olm.package\nname: foo\n---\nname: bar\n"}, []string{"c.yaml:5: document 1", "missing root schema field"}},
		{"bad yaml", map[string]string{"c.yaml": "schema: olm.package\nname: [foo\n"}, []string{"c.yaml:2: document 0", "invalid YAML: did not find expected ',' or ']'"}},
		{"bad yaml later document", map[string]string{"c.yaml": "schema: olm.package\nname: a\n---\n# c\nschema: olm.package\nname: b\n  x: y\n"}, []string{"c.yaml:7: document 1", "invalid YAML: mapping values are not allowed"}},
		{"yaml field error", map[string]string{"c.yaml": "schema: olm.package\nname: a\n---\nschema: olm.channel\nname: s\npackage: a\nentries:   {a: 1}\n"}, []string{"c.yaml:7:12: document 1", `field "entries": expected an array, got an object`}},
		{"yaml field error, entries on the next lines", map[string]string{"c.yaml": "schema: olm.channel\nname: s\npackage: a\nentries:\n  a: 1\n"}, []string{"c.yaml:4:", `field "entries": expected an array`}},
		{"json syntax", map[string]string{"d.json": "{\"schema\":\"olm.package\",\n\"name\": tru}"}, []string{"d.json:2:9: document 0", "invalid literal"}},
		{"unterminated", map[string]string{"d.json": "{\"schema\":\"olm.package\",\n\"name\": \"x\""}, []string{"d.json:1:1: document 0", "unexpected end of file"}},
		{"bad string escape", map[string]string{"d.json": `{"schema":"olm.package","name":"\x"}`}, []string{"invalid escape"}},
		{"control char", map[string]string{"d.json": "{\"schema\":\"olm.package\",\"name\":\"a\tb\"}"}, []string{"control character"}},
		{"garbage after doc", map[string]string{"d.json": pkgFoo + " 42"}, []string{"document 1", "expected a JSON object"}},
		{"wrong entries type", map[string]string{"d.json": pkgFoo + "\n" + `{"schema":"olm.channel","name":"s","package":"foo",` + "\n" + ` "entries":{}}`}, []string{"d.json:3:12: document 1", `olm.channel "s": field "entries": expected an array, got an object`}},
		{"wrong property type", map[string]string{"d.json": `{"schema":"olm.bundle","name":"b","properties":[{"type":1,"value":{}}]}`}, []string{`property[0].type: expected a string`}},
		{"invalid heavy value", map[string]string{"d.json": `{"schema":"olm.bundle","name":"b","properties":[{"type":"olm.bundle.object","value":{"data":"abc\q"}}]}`}, []string{"invalid escape"}},
		{"bad icon", map[string]string{"d.json": `{"schema":"olm.package","name":"p","icon":{"base64data":"!!!","mediatype":"x"}}`}, []string{"invalid base64"}},
		{"readme", map[string]string{"README.md": "Hello, world.\n", "a.json": pkgFoo}, []string{"README.md:1: document 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, elide := range []bool{false, true} {
				_, err := loadMap(t, tc.files, LoadOptions{ElideHeavy: elide})
				if err == nil {
					t.Fatal("Load accepted invalid input")
				}
				var le *LoadError
				if !errors.As(err, &le) {
					t.Errorf("error is not a *LoadError: %v", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
			}
		})
	}
}

func TestLoadModel(t *testing.T) {
	files := map[string]string{
		// JSON stream, pretty and compact, with duplicates and orphans.
		"b/foo.json": pkgFoo + `
{
  "schema": "olm.channel", "name": "stable", "package": "foo",
  "entries": [{"name": "foo.v2", "replaces": "foo.v1", "skips": ["foo.v0"], "skipRange": "<2.0.0"}, {"name": "foo.v1"}]
}
{"schema":"olm.channel","name":"alpha","package":"foo","entries":[]}
{"schema":"olm.bundle","name":"foo.v2","package":"foo","image":"q/foo:2","extra":"dropped",
 "properties":[{"type":"olm.package","value":{"packageName":"foo","version":"2.0.0"}},
               {"type":"olm.bundle.object","value":{"data":"eyJ9"}},
               {"type":"olm.csv.metadata","value":{"displayName":"Foo <&>"}},
               {"type":"olm.bundle.object"}],
 "relatedImages":[{"name":"","image":"q/foo:2"},{"image":"q/op@sha256:00"}]}
{"schema":"olm.bundle","name":"foo.v1","package":"foo","image":"q/foo:1"}
{"schema":"olm.bundle","name":"foo.v1","package":"foo","image":"q/foo:1-dup"}
{"schema":"olm.deprecations","package":"foo","entries":[{"reference":{"schema":"olm.bundle","name":"foo.v1"},"message":"old"}]}
{"schema":"example.com/custom","package":"foo","name":"z","data":[1, 2.50, "x"]}
{"schema":"example.com/another","package":"foo"}
`,
		// YAML multi-doc with an empty document, a duplicate package, case-insensitive keys.
		"a/bar.yaml": `---
# comment only
---
Schema: olm.package
Name: bar
DefaultChannel: beta
---
schema: olm.package
name: foo
---
schema: olm.channel
name: orphan
package: ghost
entries:
  - name: ghost.v1
---
schema: example.com/global
value: 3
`,
		".indexignore":   "*.md\n/ignored/\n",
		"README.md":      "not a catalog",
		"ignored/x.json": "not json",
		"c/empty.json":   "  \n",
	}
	c, err := loadMap(t, files, LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range c.Packages {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "bar,foo,ghost" {
		t.Fatalf("packages %s, want bar,foo,ghost", got)
	}
	bar, foo, ghost := c.Packages[0], c.Packages[1], c.Packages[2]
	if bar.Declared != 1 || bar.DefaultChannel != "beta" || foo.Declared != 2 || ghost.Declared != 0 {
		t.Errorf("declared: bar %d (%q), foo %d, ghost %d", bar.Declared, bar.DefaultChannel, foo.Declared, ghost.Declared)
	}
	if foo.Origin.File != "a/bar.yaml" && foo.Origin.File != "b/foo.json" {
		t.Errorf("foo origin %+v", foo.Origin)
	}
	if len(foo.Channels) != 2 || foo.Channels[0].Name != "alpha" || foo.Channels[1].Name != "stable" {
		t.Fatalf("foo channels not sorted: %+v", foo.Channels)
	}
	if foo.Channels[0].Entries == nil || len(foo.Channels[0].Entries) != 0 {
		t.Errorf("empty entries must load as an empty, non-nil list")
	}
	want := []ChannelEntry{{Name: "foo.v2", Replaces: "foo.v1", Skips: []string{"foo.v0"}, SkipRange: "<2.0.0"}, {Name: "foo.v1"}}
	if !reflect.DeepEqual(foo.Channels[1].Entries, want) {
		t.Errorf("entries %+v", foo.Channels[1].Entries)
	}
	if len(foo.Bundles) != 3 || foo.Bundles[0].Name != "foo.v1" || foo.Bundles[1].Image != "q/foo:1-dup" || foo.Bundles[2].Name != "foo.v2" {
		t.Fatalf("bundles (sorted, duplicates kept): %+v %+v %+v", foo.Bundles[0], foo.Bundles[1], foo.Bundles[2])
	}
	b := foo.Bundles[2]
	if len(b.Properties) != 4 || b.Properties[1].Value != nil || b.Properties[2].Value != nil || b.Properties[3].Value != nil {
		t.Errorf("heavy values not elided: %+v", b.Properties)
	}
	if !b.Elided(1) || !b.Elided(2) || b.Elided(3) || b.Elided(0) {
		t.Errorf("Elided: %v %v %v %v", b.Elided(0), b.Elided(1), b.Elided(2), b.Elided(3))
	}
	if string(b.Properties[0].Value) != `{"packageName":"foo","version":"2.0.0"}` {
		t.Errorf("property value %s", b.Properties[0].Value)
	}
	if b.Origin.File != "b/foo.json" || b.Origin.Index != 3 || b.Origin.Length == 0 {
		t.Errorf("origin %+v", b.Origin)
	}
	if len(b.RelatedImages) != 2 || b.RelatedImages[1].Image != "q/op@sha256:00" {
		t.Errorf("related images %+v", b.RelatedImages)
	}
	if len(foo.Deprecations) != 1 || foo.Deprecations[0].Entries[0].Reference.Name != "foo.v1" {
		t.Errorf("deprecations %+v", foo.Deprecations)
	}
	if len(foo.Others) != 2 || foo.Others[0].Schema != "example.com/another" || string(foo.Others[1].Blob) != `{"schema":"example.com/custom","package":"foo","name":"z","data":[1,2.50,"x"]}` {
		t.Errorf("others %+v", foo.Others)
	}
	if len(c.Others) != 1 || string(c.Others[0].Blob) != `{"schema":"example.com/global","value":3}` {
		t.Errorf("package-less others %+v", c.Others)
	}
	if len(ghost.Channels) != 1 {
		t.Errorf("orphan channel lost")
	}

	// The same catalog without eliding keeps the values; writing either gives the same bytes.
	full, err := loadMap(t, files, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(full.Packages[1].Bundles[2].Properties[2].Value) != `{"displayName":"Foo <&>"}` {
		t.Errorf("full value %s", full.Packages[1].Bundles[2].Properties[2].Value)
	}
	delete(files, ".indexignore")
	if _, err := loadMap(t, files, LoadOptions{}); err == nil {
		t.Error("README.md loaded without .indexignore")
	}
}

func TestIndexIgnore(t *testing.T) {
	var m ignoreMatcher
	m.add(".", []byte("# comment\n\n*.md\n/top.json\nbuild/\n!keep.md\n"))
	m.add("sub", []byte("/local.json\nnested/deep.json\n**/gen/*.json\n!/readme.md\nlogs\n"))
	cases := map[string]bool{
		"README.md":                 true,
		"docs/x.md":                 true,
		"keep.md":                   false,
		"a/keep.md":                 false,
		"top.json":                  true,
		"a/top.json":                false,
		"build/x.json":              true,
		"a/build/y/z.json":          true,
		"build":                     false, // a file named build: dir-only pattern
		"sub/local.json":            true,
		"local.json":                false,
		"sub/a/local.json":          false,
		"sub/nested/deep.json":      true,
		"sub/x/nested/deep.json":    false,
		"sub/gen/a.json":            true,
		"sub/a/b/gen/a.json":        true,
		"gen/a.json":                false,
		"sub/readme.md":             false,
		"sub/logs":                  true,
		"sub/logs/today.json":       true,
		"logs/today.json":           false,
		"catalog/foo/catalog.json":  false,
		"catalog/foo/catalog.yaml":  false,
		"sub/catalog/catalog.json":  false,
		"sub/catalog/nested/x.json": false,
	}
	for name, want := range cases {
		if got := m.ignored(name); got != want {
			t.Errorf("ignored(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLoadDirErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := LoadDir(ctx, filepath.Join(t.TempDir(), "missing"), LoadOptions{}); err == nil {
		t.Error("missing directory accepted")
	}
	f := filepath.Join(t.TempDir(), "file.json")
	if err := os.WriteFile(f, []byte(pkgFoo), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(ctx, f, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as root: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{\n\"schema\": 1}"), 0o644)
	_, err := LoadDir(ctx, dir, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "bad.json")+":1: document 0") {
		t.Errorf("error does not name the file with its directory: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := LoadDir(cctx, dir, LoadOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled load: %v", err)
	}
}
