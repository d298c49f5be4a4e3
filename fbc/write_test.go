package fbc

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// readTree returns every file under dir, keyed by slash path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func goldenIO(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "io", "golden", name), got)
}

func TestWriteGolden(t *testing.T) {
	ctx := context.Background()
	for _, elide := range []bool{true, false} {
		c, err := LoadDir(ctx, filepath.Join("testdata", "io", "catalog"), LoadOptions{ElideHeavy: elide})
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"json", "yaml"} {
			dir := filepath.Join(t.TempDir(), "out")
			if err := Write(ctx, c, dir, WriteOptions{Format: format}); err != nil {
				t.Fatal(err)
			}
			tree := readTree(t, dir)
			var names []string
			for n := range tree {
				names = append(names, n)
			}
			ext := "." + format
			if len(tree) != 3 || tree["bar/catalog"+ext] == nil || tree["foo/catalog"+ext] == nil || tree["catalog"+ext] == nil {
				t.Fatalf("%s: wrote %v", format, names)
			}
			for n, b := range tree {
				goldenIO(t, format+"/"+n, b)
			}
			var stream bytes.Buffer
			if err := Render(ctx, c, &stream, format); err != nil {
				t.Fatal(err)
			}
			want := append(append(append([]byte{}, tree["bar/catalog"+ext]...), tree["foo/catalog"+ext]...), tree["catalog"+ext]...)
			if !bytes.Equal(stream.Bytes(), want) {
				t.Errorf("%s: Render differs from the concatenated files of Write", format)
			}
		}
	}
}

func TestWriteDeterministicAndRoundTrip(t *testing.T) {
	ctx := context.Background()
	c, err := LoadDir(ctx, filepath.Join("testdata", "io", "catalog"), LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	// Shuffle the model: Write sorts.
	foo := c.Packages[1]
	foo.Bundles[0], foo.Bundles[1] = foo.Bundles[1], foo.Bundles[0]
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if err := Write(ctx, c, a, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Packages[0], c.Packages[1] = c.Packages[1], c.Packages[0]
	if err := Write(ctx, c, b, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ta, tb := readTree(t, a), readTree(t, b)
	for n := range ta {
		if !bytes.Equal(ta[n], tb[n]) {
			t.Errorf("%s differs between two writes", n)
		}
	}
	// Writing what was written gives the same bytes.
	again, err := LoadDir(ctx, a, LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(t.TempDir(), "d")
	if err := Write(ctx, again, d, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for n, data := range readTree(t, d) {
		if !bytes.Equal(ta[n], data) {
			t.Errorf("%s: Write(Load(Write(x))) != Write(x)", n)
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "../x", "c:"} {
		c := &Catalog{Packages: []*Package{{Name: name, Declared: 1}}}
		if err := Write(ctx, c, filepath.Join(t.TempDir(), "out"), WriteOptions{}); err == nil {
			t.Errorf("package name %q accepted", name)
		}
	}
	c := &Catalog{Packages: []*Package{{Name: "ok", Declared: 1, DefaultChannel: "s"}}}
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	if err := Write(ctx, c, full, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("non-empty directory: %v", err)
	}
	if err := Write(ctx, c, t.TempDir(), WriteOptions{Format: "xml"}); err == nil {
		t.Error("unknown format accepted")
	}
	if err := Render(ctx, c, &bytes.Buffer{}, "toml"); err == nil {
		t.Error("unknown render format accepted")
	}
	dup := &Catalog{Packages: []*Package{{Name: "ok", Declared: 1}, {Name: "ok", Declared: 1}}}
	if err := Write(ctx, dup, filepath.Join(t.TempDir(), "o"), WriteOptions{}); err == nil {
		t.Error("package twice in the model accepted")
	}
}

func TestWriteRestoreErrors(t *testing.T) {
	ctx := context.Background()
	doc := `{"schema":"olm.bundle","name":"b","package":"p","properties":[{"type":"olm.bundle.object","value":{"data":"eA=="}}]}`
	fsys := fstest.MapFS{"c.json": {Data: []byte(doc)}}
	c, err := Load(ctx, fsys, LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Render(ctx, c, &out, "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"data": "eA=="`) {
		t.Errorf("value not restored:\n%s", out.String())
	}
	// The source changed after Load.
	fsys["c.json"] = &fstest.MapFile{Data: []byte(strings.Replace(doc, `"name":"b"`, `"name":"x"`, 1))}
	if err := Render(ctx, c, &out, "json"); err == nil || !strings.Contains(err.Error(), "source changed") {
		t.Errorf("changed source: %v", err)
	}
	delete(fsys, "c.json")
	if err := Render(ctx, c, &out, "json"); err == nil || !strings.Contains(err.Error(), "c.json") {
		t.Errorf("missing source: %v", err)
	}
}

// TestWriteManySmallPackagesAllocatesLittle writes a catalog of many small
// packages (a pruned catalog of a large mirror: thousands of files of a few
// KiB) and checks what each package costs in allocated bytes: the files
// share one write buffer instead of a MiB each.
func TestWriteManySmallPackagesAllocatesLittle(t *testing.T) {
	const n = 200
	files := map[string]string{}
	for i := range n {
		p := fmt.Sprintf("pkg-%03d", i)
		files[p+"/catalog.json"] = fmt.Sprintf(`{"schema":"olm.package","name":%q,"defaultChannel":"stable"}
{"schema":"olm.channel","name":"stable","package":%q,"entries":[{"name":%q}]}
{"schema":"olm.bundle","name":%q,"package":%q,"image":"reg.example/ns/%s@sha256:%064d","properties":[{"type":"olm.package","value":{"packageName":%q,"version":"1.0.0"}}]}
`, p, p, p+".v1.0.0", p+".v1.0.0", p, p, i, p)
	}
	c, err := loadMap(t, files, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := Write(context.Background(), c, filepath.Join(t.TempDir(), "out"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 64<<10 {
		t.Errorf("writing a package of one bundle allocated %d bytes, want under 64 KiB", per)
	}
}
