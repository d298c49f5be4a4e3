package validate

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
)

func TestValidationErrorFormat(t *testing.T) {
	c := validTestCatalog()
	findPkg(c, "foo").DefaultChannel = ""
	findPkg(c, "bar").DefaultChannel = ""
	findBundle(findPkg(c, "bar"), "bar.v0.1.0").Image = ""
	c.Others = append(c.Others, &fbc.Meta{Schema: "?"})
	err := Catalog(c)
	want := strings.Join([]string{
		`catalog: invalid schema "?" of a custom blob: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$ (opm serve cannot build its cache)`,
		`package "bar": default channel must be set`,
		`package "bar", bundle "bar.v0.1.0": bundle image must be set`,
		`package "foo": default channel must be set`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
	// Deterministic: the same input gives the same text.
	for i := 0; i < 5; i++ {
		if again := Catalog(c); again.Error() != err.Error() {
			t.Fatalf("unstable output:\n%v\n---\n%v", again, err)
		}
	}
}

// testdataCases lists the sub-directories of dir.
func testdataCases(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatalf("no test cases in %s", dir)
	}
	return out
}

// TestValidateTestdataInvalid loads every catalog of testdata/invalid/<case>/ and
// checks that Validate reports exactly the problems listed in its expected.txt
// (one substring of a problem line per line; the file is excluded from the catalog
// by the case's .indexignore).
func TestValidateTestdataInvalid(t *testing.T) {
	base := filepath.Join("testdata", "invalid")
	for _, name := range testdataCases(t, base) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(base, name)
			raw, err := os.ReadFile(filepath.Join(dir, "expected.txt"))
			if err != nil {
				t.Fatal(err)
			}
			var expected []string
			for _, l := range strings.Split(string(raw), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					expected = append(expected, l)
				}
			}
			for _, elide := range []bool{false, true} {
				c, err := fbc.LoadDir(context.Background(), dir, fbc.LoadOptions{ElideHeavy: elide})
				if err != nil {
					t.Fatalf("LoadDir: %v", err)
				}
				err = Catalog(c)
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("elide=%v: want a *ValidationError, got %v", elide, err)
				}
				lines := make([]string, len(ve.Problems))
				for i, p := range ve.Problems {
					lines[i] = p.String()
				}
				used := make([]bool, len(lines))
				for _, want := range expected {
					found := false
					for i, l := range lines {
						if !used[i] && strings.Contains(l, want) {
							used[i], found = true, true
							break
						}
					}
					if !found {
						t.Errorf("elide=%v: no problem matches %q; got:\n%s", elide, want, err)
					}
				}
				for i, ok := range used {
					if !ok {
						t.Errorf("elide=%v: unexpected problem: %s", elide, lines[i])
					}
				}
			}
		})
	}
}

func TestValidateTestdataValid(t *testing.T) {
	base := filepath.Join("testdata", "valid")
	for _, name := range testdataCases(t, base) {
		t.Run(name, func(t *testing.T) {
			for _, elide := range []bool{false, true} {
				c, err := fbc.LoadDir(context.Background(), filepath.Join(base, name), fbc.LoadOptions{ElideHeavy: elide})
				if err != nil {
					t.Fatalf("LoadDir: %v", err)
				}
				if len(c.Packages) == 0 {
					t.Fatal("no packages loaded")
				}
				if err := Catalog(c); err != nil {
					t.Errorf("elide=%v: Validate:\n%v", elide, err)
				}
			}
		})
	}
}

// realCatalogsDir holds real catalogs that pass opm validate (see its SOURCES.md).
var realCatalogsDir = fixtures.RealCatalogs()

// realCatalogRoots returns the catalog roots listed in SOURCES.md's table.
func realCatalogRoots(t testing.TB) []string {
	raw, err := os.ReadFile(filepath.Join(realCatalogsDir, "SOURCES.md"))
	if err != nil {
		fixtures.Missing(t, "real catalogs: %v", err)
	}
	re := regexp.MustCompile("(?m)^\\| [^|]+ \\| `([^`]+)` \\|")
	var roots []string
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		roots = append(roots, filepath.Join(realCatalogsDir, m[1]))
	}
	if len(roots) == 0 {
		t.Fatalf("no catalog roots found in %s/SOURCES.md", realCatalogsDir)
	}
	return roots
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// catalogBytes is the total size of the regular files under dir.
func catalogBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func TestValidateRealCatalogs(t *testing.T) {
	// Loading tens of MB of YAML takes about a minute under the race detector;
	// the small catalogs still run there.
	const bigCatalog = 4 << 20
	slow := raceEnabled() || testing.Short()
	for _, root := range realCatalogRoots(t) {
		t.Run(filepath.Base(root), func(t *testing.T) {
			if size := catalogBytes(root); slow && size > bigCatalog {
				t.Skipf("%s is %d MB: skipped with -race or -short", root, size>>20)
			}
			c, err := fbc.LoadDir(context.Background(), root, fbc.LoadOptions{ElideHeavy: true})
			if err != nil {
				t.Fatalf("LoadDir: %v", err)
			}
			if err := Catalog(c); err != nil {
				t.Errorf("Catalog(%s):\n%v", root, err)
			}
		})
	}
}

// BenchmarkValidate validates the largest real catalog (loaded once, heavy values
// elided) or, with AIRLOCK_BENCH_CATALOG set to a catalog root, that catalog.
func BenchmarkValidate(b *testing.B) {
	root := os.Getenv("AIRLOCK_BENCH_CATALOG")
	if root == "" {
		root = realCatalogRoots(b)[0]
	}
	c, err := fbc.LoadDir(context.Background(), root, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		b.Fatal(err)
	}
	var bundles, entries int
	for _, p := range c.Packages {
		bundles += len(p.Bundles)
		for _, ch := range p.Channels {
			entries += len(ch.Entries)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Catalog(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bundles), "bundles")
	b.ReportMetric(float64(entries), "entries")
}

func TestValidateDir(t *testing.T) {
	ctx := context.Background()
	n, err := Dir(ctx, filepath.Join("testdata", "valid", "simple"), nil)
	if err != nil {
		t.Fatalf("Dir(valid): %v", err)
	}
	if want := (fbc.CatalogCounts{Packages: 1, Channels: 1, Bundles: 3}); n != want {
		t.Errorf("counts = %+v, want %+v", n, want)
	}

	n, err = Dir(ctx, filepath.Join("testdata", "invalid", "duplicate-bundles"), nil)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 {
		t.Fatalf("Dir(invalid) = %v, want one problem", err)
	}
	if want := (fbc.CatalogCounts{Packages: 1, Channels: 1, Bundles: 4}); n != want {
		t.Errorf("counts = %+v, want %+v", n, want)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("schema: olm.package\nname: x\n---\n- 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Dir(ctx, dir, nil)
	var le *fbc.LoadError
	if !errors.As(err, &le) || errors.Is(err, ErrInvalidCatalog) {
		t.Fatalf("Dir(unloadable) = %v, want a *LoadError", err)
	}
	if !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("load error does not name the file: %v", err)
	}
}

// FuzzValidate loads arbitrary catalog files and validates whatever loads: Validate
// must never panic, and must be deterministic.
func FuzzValidate(f *testing.F) {
	for _, kind := range []string{"valid", "invalid"} {
		files, _ := filepath.Glob(filepath.Join("testdata", kind, "*", "*.yaml"))
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := fbc.Load(context.Background(), fstest.MapFS{"catalog.yaml": {Data: data}}, fbc.LoadOptions{})
		if err != nil {
			return
		}
		err1 := Catalog(c)
		err2 := Catalog(c)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("Validate is not deterministic:\n%v\n---\n%v", err1, err2)
		}
	})
}

// TestValidatePropertyValues loads a one-bundle catalog with one more property,
// as JSON and as YAML, with heavy values kept and elided (what the CLI does),
// and checks Validate's verdict against opm's (operator-registry v1.73.0): the
// problems must be the same in every mode.
func TestValidatePropertyValues(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	bo := func(data string) string {
		return `{"type":"olm.bundle.object","value":{"data":"` + data + `"}}`
	}
	tests := []struct {
		name, prop string
		want       string // the only problem (substring); "" if opm accepts
	}{
		// The disagreements the conformance tests found (docs/conformance.md).
		{"null gvk", `{"type":"olm.gvk","value":null}`, ""},
		{"empty type", `{"type":"","value":{"a":1}}`, ""},
		{"csv metadata wrong field type", `{"type":"olm.csv.metadata","value":{"displayName":5}}`,
			`parse property[1] of type "olm.csv.metadata": json: cannot unmarshal number into Go struct field csvMetadata.displayName of type string`},
		{"bundle object not YAML", bo("a2luZDogW3VuY2xvc2Vk"),
			`read bundle objects: convert bundle object property at index 1 to JSON: `},
		{"bundle object not base64", bo("%%%not base64"),
			`read bundle objects: parse property at index 1 as bundle object: illegal base64 data at input byte 0`},
		{"null csv metadata", `{"type":"olm.csv.metadata","value":null}`, ""},
		{"null unknown type", `{"type":"example.com.thing","value":null}`, ""},

		// Around them.
		{"no type, no value", `{}`, `parse property[1] of type "": unexpected end of JSON input`},
		{"csv metadata without value", `{"type":"olm.csv.metadata"}`, `parse property[1] of type "olm.csv.metadata": unexpected end of JSON input`},
		{"bundle object without value", `{"type":"olm.bundle.object"}`, `parse property at index 1 as bundle object: unexpected end of JSON input`},
		{"csv metadata full", `{"type":"olm.csv.metadata","value":{"annotations":{"a":"b"},"labels":{"c":"d"},"keywords":["k"],` +
			`"description":"d","displayName":"n","maturity":"stable","minKubeVersion":"1.20.0","provider":{"name":"p","url":"u"},` +
			`"links":[{"name":"l","url":"u"}],"maintainers":[{"name":"m","email":"e"}],"installModes":[{"type":"OwnNamespace","supported":true}],` +
			`"nativeAPIs":[{"group":"","version":"v1","kind":"Pod"}],"crdDescriptions":{"owned":[{"name":"a.b","version":"v1","kind":"A",` +
			`"resources":[{"name":"x","kind":"Y","version":"v1"}],"specDescriptors":[{"path":"p","x-descriptors":["x"],"value":{"any":[1]}}]}]},` +
			`"apiServiceDefinitions":{"required":[{"name":"n","group":"g","version":"v","kind":"K","containerPort":443}]},"unknown":{"x":[1]}}}`, ""},
		{"csv metadata annotation not a string", `{"type":"olm.csv.metadata","value":{"annotations":{"a":1}}}`, `csvMetadata.annotations of type string`},
		{"csv metadata install mode supported not a bool", `{"type":"olm.csv.metadata","value":{"installModes":[{"type":"OwnNamespace","supported":"yes"}]}}`, `of type bool`},
		{"csv metadata container port a string", `{"type":"olm.csv.metadata","value":{"apiServiceDefinitions":{"owned":[{"containerPort":"443"}]}}}`, `of type int32`},
		{"csv metadata keywords not a list", `{"type":"olm.csv.metadata","value":{"keywords":"k"}}`, `of type []string`},
		{"csv metadata an array", `{"type":"olm.csv.metadata","value":[]}`, `cannot unmarshal array`},
		{"bundle object YAML", bo(b64("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")), ""},
		{"bundle object JSON", bo(b64(`{"apiVersion":"v1","kind":"ConfigMap"}`)), ""},
		{"bundle object starting with { is not converted", bo(b64("\n\t {not: [json")), ""},
		{"bundle object YAML with a tab indent", bo(b64("a:\n\t- b\n")), `convert bundle object property at index 1 to JSON`},
		{"bundle object base64 with line breaks", `{"type":"olm.bundle.object","value":{"data":"e3\n0\r\n="}}`, ""},
		{"bundle object base64 with line breaks and too much padding", `{"type":"olm.bundle.object","value":{"data":"e30\n=\r\n\u003d"}}`, `illegal base64`},
		{"bundle object base64 escaped slash", `{"type":"olm.bundle.object","value":{"data":"` + strings.ReplaceAll(b64("{\"a\":\"???\"}"), "/", `\/`) + `"}}`, ""},
		{"bundle object data null", `{"type":"olm.bundle.object","value":{"data":null}}`, ""},
		{"bundle object empty", `{"type":"olm.bundle.object","value":{}}`, ""},
		{"bundle object null", `{"type":"olm.bundle.object","value":null}`, ""},
		{"bundle object data a number", `{"type":"olm.bundle.object","value":{"data":5}}`, `parse property at index 1 as bundle object: json: cannot unmarshal number`},
		{"bundle object a string", `{"type":"olm.bundle.object","value":"e30="}`, `parse property at index 1 as bundle object: json: cannot unmarshal string`},
		{"bundle object data key in another case", `{"type":"olm.bundle.object","value":{"DATA":"%%"}}`, `illegal base64`},
		{"bundle object two data keys, first bad", `{"type":"olm.bundle.object","value":{"data":"%%","Data":"e30="}}`, `illegal base64`},
		// (keys in sorted order: documents read from YAML have their keys sorted)
		{"bundle object two data keys, last not YAML", `{"type":"olm.bundle.object","value":{"DATA":"e30=","data":"a2luZDogW3VuY2xvc2Vk"}}`, `convert bundle object property at index 1 to JSON`},
	}
	const head = `{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","name":"stable","package":"foo","entries":[{"name":"foo.v1.0.0"}]}
`
	bundle := func(prop string) string {
		return `{"schema":"olm.bundle","name":"foo.v1.0.0","package":"foo","image":"quay.io/example/foo:v1","properties":[` +
			`{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}},` + prop + `]}` + "\n"
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{
				"json": head + bundle(tt.prop),
				// A YAML stream of flow mappings: the loader's YAML path.
				"yaml": "---\n" + strings.ReplaceAll(head, "\n", "\n---\n") + bundle(tt.prop),
			}
			formats := []string{"json", "yaml"}
			if strings.Contains(tt.prop, `\/`) {
				formats = formats[:1] // not an escape of YAML 1.1
			}
			var first string
			for _, format := range formats {
				for _, elide := range []bool{false, true} {
					fsys := fstest.MapFS{"catalog": {Data: []byte(files[format])}}
					c, err := fbc.Load(context.Background(), fsys, fbc.LoadOptions{ElideHeavy: elide})
					if err != nil {
						t.Fatalf("%s, elide=%v: Load: %v", format, elide, err)
					}
					err = Catalog(c)
					got := ""
					if err != nil {
						got = err.Error()
					}
					switch {
					case tt.want == "" && err != nil:
						t.Errorf("%s, elide=%v: want valid (opm accepts), got:\n%v", format, elide, err)
					case tt.want != "" && err == nil:
						t.Errorf("%s, elide=%v: want a problem with %q (opm refuses), got none", format, elide, tt.want)
					case tt.want != "":
						var ve *ValidationError
						if !errors.As(err, &ve) || len(ve.Problems) != 1 || !strings.Contains(ve.Problems[0].String(), tt.want) {
							t.Errorf("%s, elide=%v: want exactly one problem with %q, got:\n%v", format, elide, tt.want, err)
						} else if p := ve.Problems[0]; p.Package != "foo" || p.Bundle != "foo.v1.0.0" {
							t.Errorf("%s, elide=%v: problem does not name package and bundle: %+v", format, elide, p)
						}
					}
					if format == "json" && !elide {
						first = got
					} else if got != first {
						t.Errorf("%s, elide=%v: problems differ from json with values:\n%s\n---\n%s", format, elide, got, first)
					}
				}
			}
		})
	}
}
