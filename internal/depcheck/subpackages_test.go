package depcheck

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// packageDoc returns the whole doc comment of the package in dir (go/build
// keeps only its first sentence).
func packageDoc(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			return f.Doc.Text()
		}
	}
	return ""
}

// TestMirrorDocListsSubpackages keeps the doc comment of package mirror a map
// of its sub-packages: each direct sub-package has its line there
// ("  - NAME: what it owns").
func TestMirrorDocListsSubpackages(t *testing.T) {
	root := moduleRoot(t)
	pkgs := loadPackages(t, root)
	doc := packageDoc(t, filepath.Join(root, "mirror"))
	if doc == "" {
		t.Fatal("package mirror has no doc comment")
	}
	n := 0
	for _, name := range sortedKeys(pkgs) {
		if path.Dir(name) != "mirror" {
			continue
		}
		n++
		if sub := path.Base(name); !strings.Contains(doc, "\n  - "+sub+": ") {
			t.Errorf("mirror/doc.go does not list its sub-package %s: add a line \"//   - %s: what it owns\"", name, sub)
		}
	}
	if n < 5 {
		t.Fatalf("found only %d sub-packages of mirror: the walk is broken", n)
	}
}
