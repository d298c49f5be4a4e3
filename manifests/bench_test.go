package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
)

// realCatalogRoot is a real file-based catalog shared by the team (outside the module);
// tests that use it skip when it is absent, and fail in CI (fixtures.Missing).
var realCatalogRoot = filepath.Join(fixtures.RealCatalogs(), "community-operators-prod-v4.21/catalogs/v4.21")

var imageLine = regexp.MustCompile(`(?m)^\s*(?:-\s+)?image:\s*["']?([^"'\s]+)["']?\s*$`)

// realImages returns every distinct image reference of the real catalog, mapped like
// the planner does (REG/NS + source path).
func realImages(tb testing.TB) []Image {
	tb.Helper()
	if _, err := os.Stat(realCatalogRoot); err != nil {
		fixtures.Missing(tb, "real catalog: %v", err)
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(realCatalogRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, "image:") {
				continue
			}
			if m := imageLine.FindStringSubmatch(line); m != nil {
				seen[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	refs := make([]string, 0, len(seen))
	for r := range seen {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	var out []Image
	for _, r := range refs {
		if _, err := parseRef(r); err != nil {
			continue
		}
		out = append(out, mirrored(r, KindOperator))
	}
	return out
}

func TestRealCatalogImages(t *testing.T) {
	images := realImages(t)
	if len(images) < 500 {
		t.Fatalf("only %d images found in %s", len(images), realCatalogRoot)
	}
	cats := []Catalog{{Source: "registry.redhat.io/redhat/community-operator-index:v4.21", Destination: mirrorNS + "/redhat/community-operator-index:v4.21"}}
	for _, opts := range []Options{{}, {RepositoryScope: true}} {
		set, err := Build(images, cats, opts)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := set.Write(dir); err != nil {
			t.Fatal(err)
		}
		if problems := checkFolder(dir, images, cats, opts); len(problems) > 0 {
			t.Fatalf("%+v:\n%s", opts, strings.Join(problems, "\n"))
		}
		rules, bytes := 0, 0
		for _, f := range set.Files() {
			rules += f.Rules
			bytes += len(f.Data)
		}
		t.Logf("%d images, %+v: %d IDMS, %d ITMS, %d ICSP objects, %d rules, %d files, %d bytes",
			len(images), opts, len(set.ImageDigestMirrorSets), len(set.ImageTagMirrorSets), len(set.ImageContentSourcePolicies), rules, len(set.Files()), bytes)
	}
}

// syntheticImages is a large mapping: n images over n/10 repositories in n/50 namespaces.
func syntheticImages(n int) []Image {
	out := make([]Image, 0, n)
	for i := 0; i < n; i++ {
		repo := fmt.Sprintf("registry%d.example.com/ns%04d/repo%05d", i%7, (i/10)%(n/50+1), i/10)
		if i%3 == 0 {
			out = append(out, mirrored(repo+fmt.Sprintf(":v%d", i), KindGeneric))
		} else {
			out = append(out, mirrored(repo+"@"+dg(fmt.Sprint(i)), KindOperator))
		}
	}
	return out
}

func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1000, 30000} {
		for _, scope := range []bool{false, true} {
			images := syntheticImages(n)
			b.Run(fmt.Sprintf("images=%d/repositoryScope=%v", n, scope), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Build(images, nil, Options{RepositoryScope: scope}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkBuildRealCatalog(b *testing.B) {
	images := realImages(b)
	b.ReportAllocs()
	for b.Loop() {
		set, err := Build(images, nil, Options{RepositoryScope: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := set.Write(b.TempDir()); err != nil {
			b.Fatal(err)
		}
	}
}
