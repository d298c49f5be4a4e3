// Package depcheck keeps airlock's architecture what docs/architecture.md says
// it is: which package may import which, what the binary links, how large a
// file may grow, that every package says what it owns, and that registry
// answers are read in one place (TestNoRegistryCodesMatchedAsText). It has
// no code of its own; the rules are the table in rules_test.go.
package depcheck

import (
	"bufio"
	"errors"
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/airlock-mirror/airlock"

// A rule says which of this module's packages one package (or every package
// under a prefix written "dir/...") may import in its non-test files.
type rule struct {
	pkg string
	may []string
}

// anyProduct in a rule's may list allows every package the binary may link.
const anyProduct = "*"

// testSupport are the packages that exist for tests and benchmarks only: the
// binary never links them, and no product package imports them.
var testSupport = []string{"internal/testutil/...", "bench/...", "internal/gen/..."}

// matches reports whether pkg is pattern or, for "dir/...", dir or under it.
func matches(pattern, pkg string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	return pattern == pkg
}

func matchesAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, pkg) })
}

// ruleFor finds the rule of pkg: an exact one first, then the longest prefix.
func ruleFor(pkg string) (rule, bool) {
	best, found := rule{}, false
	for _, r := range rules {
		if r.pkg == pkg {
			return r, true
		}
		if matches(r.pkg, pkg) && (!found || len(r.pkg) > len(best.pkg)) {
			best, found = r, true
		}
	}
	return best, found
}

// pkgInfo is one package of the module as the layering tests see it.
type pkgInfo struct {
	dir     string
	doc     string
	imports []string // this module's packages, relative, from non-test files
	files   []string // non-test .go files, every build tag included
	tests   []string // _test.go files
}

// moduleRoot walks up from the test's folder to the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module "+module+"\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of %s above the test's folder", module)
		}
		dir = parent
	}
}

// loadPackages reads every package of the module under root (nested modules
// and testdata skipped) in the default build context and once more with the
// build tags the project uses, so that a file behind a tag is checked too.
func loadPackages(t *testing.T, root string) map[string]*pkgInfo {
	t.Helper()
	pkgs := map[string]*pkgInfo{}
	for _, tags := range [][]string{nil, {"isal", "cgo", "containers_image_openpgp"}} {
		ctx := build.Default
		ctx.BuildTags = tags
		ctx.CgoEnabled = true
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if p != root {
				name := d.Name()
				if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module: conformance, third_party
				}
			}
			bp, err := ctx.ImportDir(p, 0)
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			info := pkgs[rel]
			if info == nil {
				info = &pkgInfo{dir: p}
				pkgs[rel] = info
			}
			if info.doc == "" {
				info.doc = bp.Doc
			}
			for _, imp := range bp.Imports {
				if r, ok := strings.CutPrefix(imp, module+"/"); ok && !slices.Contains(info.imports, r) {
					info.imports = append(info.imports, r)
				}
			}
			for _, f := range bp.GoFiles {
				if !slices.Contains(info.files, f) {
					info.files = append(info.files, f)
				}
			}
			for _, f := range slices.Concat(bp.TestGoFiles, bp.XTestGoFiles) {
				if !slices.Contains(info.tests, f) {
					info.tests = append(info.tests, f)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pkgs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// violations checks every import of every package against the rules and
// returns what breaks them, one sentence each.
func violations(pkgs map[string]*pkgInfo) []string {
	var out []string
	for _, name := range sortedKeys(pkgs) {
		r, ok := ruleFor(name)
		support := matchesAny(testSupport, name)
		switch {
		case support && (!ok || r.pkg != name):
			continue // test support is checked where a rule names it
		case !ok:
			out = append(out, fmt.Sprintf("package %s is in no layer: add it to the rules in internal/depcheck/rules_test.go and to docs/architecture.md", name))
			continue
		}
		for _, imp := range pkgs[name].imports {
			switch {
			case support && !matchesAny(r.may, imp):
				out = append(out, fmt.Sprintf("%s imports %s, which its rule does not allow (it may import: %s); see docs/architecture.md", name, imp, strings.Join(r.may, ", ")))
			case support:
			case matchesAny(testSupport, imp):
				out = append(out, fmt.Sprintf("%s imports %s, which is test support: product code never links it", name, imp))
			case matches("cmd/...", imp):
				out = append(out, fmt.Sprintf("%s imports %s: nothing imports the command line", name, imp))
			case slices.Contains(r.may, anyProduct):
			case !matchesAny(r.may, imp):
				out = append(out, fmt.Sprintf("%s imports %s, which its layer does not allow (it may import: %s); see docs/architecture.md", name, imp, strings.Join(r.may, ", ")))
			}
		}
	}
	return out
}

// TestLayering checks the module's packages against the rules.
func TestLayering(t *testing.T) {
	pkgs := loadPackages(t, moduleRoot(t))
	if len(pkgs) < 20 {
		t.Fatalf("found only %d packages: the walk is broken", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestLayeringCatches feeds the checker imports that break the architecture,
// so that a checker that lets everything through fails here.
func TestLayeringCatches(t *testing.T) {
	bad := []struct{ pkg, imp, want string }{
		{"mirror/transfer", "fbc", "does not allow"},
		{"mirror", "prune", "does not allow"},
		{"fbc", "prune", "does not allow"},
		{"prune", "mirror", "does not allow"},
		{"mirror/oci", "mirror/registry", "does not allow"},
		{"mirror/registry", "mirror/transfer", "does not allow"},
		{"workspace", "pipeline", "does not allow"},
		{"internal/seed", "pipeline", "does not allow"},
		{"pipeline", "cmd/airlock", "nothing imports the command line"},
		{"pipeline", "mirror/adaptive", "does not allow"},
		{"pipeline", "fbc/internal/scan", "does not allow"},
		{"pipeline", "kube", "does not allow"},
		{"mirror/transfer", "internal/testutil/registrytest", "test support"},
		{"cmd/airlock", "bench/workload", "test support"},
		{"internal/testutil/endpointtest", "mirror/registry", "does not allow"},
		{"internal/testutil/endpointtest", "internal/testutil/registrytest", "does not allow"},
		{"newpkg", "fbc", "in no layer"},
	}
	for _, c := range bad {
		got := violations(map[string]*pkgInfo{c.pkg: {imports: []string{c.imp}}})
		if len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("%s importing %s: got %q, want one violation saying %q", c.pkg, c.imp, got, c.want)
		}
	}
	good := map[string]*pkgInfo{
		"cmd/airlock":                    {imports: []string{"pipeline", "mirror/archive", "fbc"}},
		"pipeline":                       {imports: []string{"mirror", "prune", "workspace", "report"}},
		"prune":                          {imports: []string{"fbc", "imageset"}},
		"mirror/catalogimage":            {imports: []string{"mirror/registry", "internal/atomicfile"}},
		"internal/testutil/x":            {imports: []string{"pipeline"}},
		"internal/testutil/endpointtest": {imports: []string{"mirror/endpoint", "mirror/oci"}},
	}
	if got := violations(good); len(got) != 0 {
		t.Errorf("allowed imports reported: %q", got)
	}
}

// TestPackagesSayWhatTheyOwn requires a package doc comment everywhere.
func TestPackagesSayWhatTheyOwn(t *testing.T) {
	pkgs := loadPackages(t, moduleRoot(t))
	for _, name := range sortedKeys(pkgs) {
		if pkgs[name].doc == "" && len(pkgs[name].files) > 0 {
			t.Errorf("package %s has no doc comment saying what it owns and what it must not know", name)
		}
	}
}

// maxFileLines keeps files about one thing; generated tables and vendored code
// are exempt. There is no limit on a package's size: code is placed by concept,
// and a package grows as large as its concept needs.
const maxFileLines = 500

func countLines(t *testing.T, path string) (n int, generated bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		n++
		if n < 5 && strings.HasPrefix(sc.Text(), "// Code generated ") && strings.HasSuffix(sc.Text(), " DO NOT EDIT.") {
			generated = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n, generated
}

// walkFiles calls fn with the path, and the slash-separated path relative to
// root, of every file of the repository (nested modules included), leaving
// out third_party, testdata and hidden folders.
func walkFiles(t *testing.T, root string, fn func(p, rel string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "third_party" || n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fn(p, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSizes keeps every Go file of the repository (the conformance module
// included, third_party excluded) at most maxFileLines long.
func TestSizes(t *testing.T) {
	walkFiles(t, moduleRoot(t), func(p, rel string) {
		if !strings.HasSuffix(p, ".go") {
			return
		}
		if n, gen := countLines(t, p); !gen && n > maxFileLines {
			t.Errorf("%s has %d lines (at most %d): split it by responsibility", rel, n, maxFileLines)
		}
	})
}

// TestArchitectureNamesEveryPackage keeps docs/architecture.md's table whole:
// every package of the module is named there, in backquotes.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := loadPackages(t, root)
	for _, name := range sortedKeys(pkgs) {
		if name == "." || name == "" {
			continue
		}
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/architecture.md does not name package %s: add it to the table of every package", name)
		}
	}
}
