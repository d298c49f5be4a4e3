package depcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// schemePrefixes are the location schemes as code would write them to add or
// cut one by hand.
var schemePrefixes = []string{"docker://", "file://", "oci://"}

// schemeOwners may write them: the location package parses and prints every
// location (location.Parse…, Location.String, ImageRef, CutLayout).
// Everything else goes through it, so the hand-made prefix stripping the
// package replaced cannot come back. What is not a location (a browser's
// file: page URL) is built with net/url, not with the literal.
var schemeOwners = []string{"location"}

// schemeLiterals returns, one line each, the string literals of src (a Go
// file) that are exactly a location scheme's prefix.
func schemeLiterals(name string, src any) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		if v, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(schemePrefixes, v) {
			out = append(out, fmt.Sprintf("%s: %s written by hand: parse the location with package location (location.ParseDir, ParseDestination, ImageRef, CutLayout…) and print it with Location.String", fset.Position(lit.Pos()), lit.Value))
		}
		return true
	})
	return out, nil
}

// TestNoSchemeLiterals checks every non-test Go file of the module (test
// support and benchmarks included: their command lines use Location.String
// too) for the literals "docker://", "file://" and "oci://".
func TestNoSchemeLiterals(t *testing.T) {
	root := moduleRoot(t)
	pkgs := loadPackages(t, root)
	for _, name := range sortedKeys(pkgs) {
		if matchesAny(schemeOwners, name) {
			continue
		}
		for _, file := range pkgs[name].files {
			path := filepath.Join(pkgs[name].dir, file)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, path)
			found, err := schemeLiterals(rel, src)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				t.Error(f)
			}
		}
	}
}

// TestNoSchemeLiteralsCatches feeds the checker the code it must refuse, and
// text it must let through (usage strings and messages that show a scheme).
func TestNoSchemeLiteralsCatches(t *testing.T) {
	src := "package p\n" +
		"import \"strings\"\n" +
		"func a(s string) string { return strings.TrimPrefix(s, \"docker://\") }\n" +
		"func b(d string) string { return `file://` + d }\n" +
		"func c(s string) bool { return strings.HasPrefix(s, \"oci\\x3a//\") }\n" +
		"const usage = \"file://DIR: the workspace\"\n" +
		"const msg = \"must be docker://REGISTRY/NAMESPACE\"\n"
	got, err := schemeLiterals("p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("got %d findings, want 3 (docker://, file:// and oci:// written by hand):\n%q", len(got), got)
	}
}
