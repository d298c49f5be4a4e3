package depcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// registryCodes matches the error codes of the distribution spec (and those
// Distribution adds) as a word.
var registryCodes = regexp.MustCompile(`\b(BLOB_UNKNOWN|BLOB_UPLOAD_INVALID|BLOB_UPLOAD_UNKNOWN|DIGEST_INVALID|MANIFEST_BLOB_UNKNOWN|MANIFEST_INVALID|MANIFEST_UNKNOWN|MANIFEST_UNVERIFIED|NAME_INVALID|NAME_UNKNOWN|SIZE_INVALID|TAG_INVALID|UNAUTHORIZED|DENIED|UNSUPPORTED|TOOMANYREQUESTS|UNAVAILABLE|PAGINATION_NUMBER_INVALID|RANGE_INVALID)\b`)

// codesOwners are the packages that may write registry error codes out: the
// registry client, which parses answers, and the package of the one typed
// registry error (endpoint.RegistryError), which names the codes.
var codesOwners = []string{"mirror/registry", "mirror/endpoint"}

// textMatchers are the packages whose functions match text.
var textMatchers = []string{"strings", "bytes", "regexp"}

// codeMatches returns where src (one Go file) matches registry error codes as
// text, one sentence each: a string literal that is a code on its own (what
// else is it for but a comparison), or a literal holding a code given to a
// function of strings, bytes or regexp or compared with == or != (a body's or
// an error's text searched for a code). Literals that merely hold a code, such
// as the JSON body a test server answers with, are fine.
func codeMatches(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	imported := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		local := filepath.Base(p)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		if slices.Contains(textMatchers, p) {
			imported[local] = true
		}
	}
	var out []string
	report := func(lit *ast.BasicLit, why string) {
		out = append(out, fmt.Sprintf("%s: %s %s: read the registry's answer with errors.As and endpoint.RegistryError's codes (StatusOf, HasCode)", fset.Position(lit.Pos()), lit.Value, why))
	}
	codeIn := func(e ast.Expr) *ast.BasicLit {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return nil
		}
		if s, err := strconv.Unquote(lit.Value); err == nil && registryCodes.MatchString(s) {
			return lit
		}
		return nil
	}
	seen := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); !ok || !imported[id.Name] {
				return true
			}
			for _, a := range n.Args {
				if lit := codeIn(a); lit != nil && !seen[lit] {
					seen[lit] = true
					report(lit, "is searched for in text")
				}
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				return true
			}
			for _, e := range []ast.Expr{n.X, n.Y} {
				if lit := codeIn(e); lit != nil && !seen[lit] {
					seen[lit] = true
					report(lit, "is compared with text")
				}
			}
		case *ast.BasicLit:
			s, err := strconv.Unquote(n.Value)
			if s = strings.TrimSpace(s); n.Kind == token.STRING && err == nil && !seen[n] && s != "" && registryCodes.FindString(s) == s {
				seen[n] = true
				report(n, "is a registry error code written out")
			}
		}
		return true
	})
	return out, nil
}

// TestNoRegistryCodesMatchedAsText keeps registry answers read in one place:
// outside the registry client and the package of the typed registry error, no
// product or test-support file (tests are free) matches an answer's body or an
// error's text for a registry error code.
func TestNoRegistryCodesMatchedAsText(t *testing.T) {
	pkgs := loadPackages(t, moduleRoot(t))
	fset := token.NewFileSet()
	checked := 0
	for _, name := range sortedKeys(pkgs) {
		if slices.Contains(codesOwners, name) {
			continue
		}
		for _, file := range pkgs[name].files {
			found, err := codeMatches(fset, filepath.Join(pkgs[name].dir, file), nil)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, v := range found {
				t.Error(v)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: the walk is broken", checked)
	}
}

// TestNoRegistryCodesMatchedAsTextCatches feeds the check the ways a body was
// matched before (and some it must let through).
func TestNoRegistryCodesMatchedAsTextCatches(t *testing.T) {
	src := `package p

import (
	"fmt"
	str "strings"
)

func f(body, msg string, err error, w any) bool {
	fmt.Fprint(w, ` + "`" + `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}` + "`" + `) // a server's answer: fine
	_ = "manifest unknown"                                          // no code: fine
	// A comment may name MANIFEST_UNKNOWN.
	for _, c := range []string{"DIGEST_INVALID", " SIZE_INVALID"} { // 1, 2
		_ = c
	}
	return str.Contains(body, "MANIFEST_BLOB_UNKNOWN: x") || // 3
		str.Contains(err.Error(), "code NAME_UNKNOWN") || // 4
		msg == "denied: DENIED" // 5
}
`
	found, err := codeMatches(token.NewFileSet(), "p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 5 {
		t.Fatalf("%d matches, want 5:\n%s", len(found), strings.Join(found, "\n"))
	}
	for i, line := range []string{":12:", ":12:", ":15:", ":16:", ":17:"} {
		if !strings.Contains(found[i], line) {
			t.Errorf("match %d, %q: want line %s", i, found[i], line)
		}
	}
}
