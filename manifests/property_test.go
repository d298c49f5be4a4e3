package manifests

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// randomMapping builds a random but valid mapping: several registries and nested
// namespaces, default destinations, targetRepo-style destinations, digest, tag and
// tag+digest sources, operator, generic and catalog images.
func randomMapping(r *rand.Rand) ([]Image, []Catalog, Options) {
	registries := []string{"quay.io", "registry.redhat.io", "ghcr.io", "docker.io", "localhost:5000", "reg.example.com:8443"}
	namespaces := []string{"a", "b", "c/d", "team-x", "c", "deep/er/path"}
	repos := []string{"app", "tool", "db", "x.y", "u_v", "op-bundle"}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	opts := Options{RepositoryScope: r.IntN(4) == 0}
	if r.IntN(2) == 0 {
		opts.MaxObjectBytes = 800 + r.IntN(1500)
	}
	dest := func(repo string) string {
		if r.IntN(5) == 0 {
			return "mirror.example.com/custom/" + pick(namespaces) + "/" + pick(repos)
		}
		path := repo[strings.IndexByte(repo, '/')+1:]
		if opts.RepositoryScope && r.IntN(2) == 0 {
			path = strings.ReplaceAll(path, "/", "-") // flattened by --max-nested-paths
		}
		return "mirror.example.com:5000/base/" + path
	}
	var images []Image
	n := r.IntN(60)
	for i := 0; i < n; i++ {
		repo := pick(registries) + "/" + pick(namespaces) + "/" + pick(repos)
		d := dg(fmt.Sprint(r.Int()))
		var src, dtag string
		switch r.IntN(10) {
		case 0:
			src, dtag = repo+":v1@"+d, ":v1"
		case 1, 2, 3, 4:
			src, dtag = repo+"@"+d, ":"+tagFor(d)
		default:
			t := fmt.Sprintf("v%d", r.IntN(3))
			src, dtag = repo+":"+t, ":"+t
		}
		kind := []Kind{KindOperator, KindGeneric, "", KindCatalog}[r.IntN(4)]
		images = append(images, Image{Source: src, Destination: dest(repo) + dtag, Digest: d, Kind: kind})
	}
	var cats []Catalog
	for i := r.IntN(4); i > 0; i-- {
		repo := pick(registries) + "/" + pick(namespaces) + "/" + pick(repos) + "-index"
		cats = append(cats, Catalog{Source: repo + ":v4.16", Destination: dest(repo) + ":v4.16", Digest: dg(repo)})
	}
	return images, cats, opts
}

func TestRandomMappings(t *testing.T) {
	iterations := 150
	if testing.Short() {
		iterations = 30
	}
	for seed := 0; seed < iterations; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		images, cats, opts := randomMapping(r)
		set, err := Build(images, cats, opts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		dir := filepath.Join(t.TempDir(), "out")
		if err := set.Write(dir); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if problems := checkFolder(dir, images, cats, opts); len(problems) > 0 {
			t.Fatalf("seed %d (%d images, %d catalogs, %+v):\n%s", seed, len(images), len(cats), opts, strings.Join(problems, "\n"))
		}
		// Order of the input does not change a byte.
		r.Shuffle(len(images), func(i, j int) { images[i], images[j] = images[j], images[i] })
		r.Shuffle(len(cats), func(i, j int) { cats[i], cats[j] = cats[j], cats[i] })
		again, err := Build(images, cats, opts)
		if err != nil {
			t.Fatal(err)
		}
		a, b := set.Files(), again.Files()
		if len(a) != len(b) {
			t.Fatalf("seed %d: shuffled input gives %d files, not %d", seed, len(b), len(a))
		}
		for i := range a {
			if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
				t.Fatalf("seed %d: shuffled input changes %s", seed, a[i].Name)
			}
		}
	}
}

// TestCheckerCatchesDefects makes sure the round-trip checker is not a test that
// cannot fail: each sabotage of a correct folder must be reported.
func TestCheckerCatchesDefects(t *testing.T) {
	images, cats := baseImages(), baseCatalogs()
	set, err := Build(images, cats, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		file    string
		old     string
		new     string
		wantMsg string
	}{
		{"rule removed", "idms-operator-0.yaml", "  - mirrors:\n    - mirror.example.com:5000/airlock/coreos\n    source: quay.io/coreos\n", "", "no ImageDigestMirrorSet rule covers quay.io/coreos/etcd-operator"},
		{"wrong mirror", "itms-generic-0.yaml", "mirror.example.com:5000/custom/node-exporter", "mirror.example.com:5000/custom/other", "does not lead to"},
		{"duplicate rule", "icsp/icsp-generic-0.yaml", "  - mirrors:\n    - mirror.example.com:5000/airlock/stefanprodan\n    source: ghcr.io/stefanprodan\n", "  - mirrors:\n    - mirror.example.com:5000/airlock/stefanprodan\n    source: ghcr.io/stefanprodan\n  - mirrors:\n    - mirror.example.com:5000/airlock/stefanprodan\n    source: ghcr.io/stefanprodan\n", "sources not sorted/unique"},
		{"bad name", "cs-catalog-latest.yaml", "name: cs-catalog-latest", "name: CS_catalog", "not a DNS-1123"},
		{"wrong apiVersion", "idms-generic-0.yaml", "config.openshift.io/v1", "config.openshift.io/v1alpha1", "unexpected apiVersion"},
		{"label missing", "icsp/icsp-operator-0.yaml", "  labels:\n    operators.openshift.org/catalog: \"true\"\n", "", "without the operators.openshift.org/catalog label"},
		{"catalog image changed", "cs-catalog-latest.yaml", "operatorhubio/catalog:latest", "operatorhubio/catalog:old", "is not a mirrored catalog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := set.Write(dir); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(tc.file))
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte(tc.old)) {
				t.Fatalf("%s does not contain %q", tc.file, tc.old)
			}
			if err := os.WriteFile(p, bytes.Replace(data, []byte(tc.old), []byte(tc.new), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			problems := strings.Join(checkFolder(dir, images, cats, Options{}), "\n")
			if !strings.Contains(problems, tc.wantMsg) {
				t.Fatalf("checker did not report %q; got:\n%s", tc.wantMsg, problems)
			}
		})
	}
}

// FuzzParseTemplate: any template either fails with an error naming its path or yields
// a CatalogSource that parses back with the overwritten fields in place.
func FuzzParseTemplate(f *testing.F) {
	for _, name := range []string{"catalogsource.yaml", "wrong-kind.yaml", "configmap.yaml", "broken.yaml"} {
		data, _ := readTemplate(f, name)
		f.Add(data)
	}
	f.Add([]byte("apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nmetadata: null\nspec: null\n"))
	f.Add([]byte("apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nspec:\n  priority: 12345678901234567890\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Catalog{Source: "quay.io/a/idx:v1", Destination: "m.example.com/a/idx:v1", Template: data, TemplatePath: "fuzz.yaml"}
		set, err := Build(nil, []Catalog{c}, Options{})
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the template: %v", err)
			}
			return
		}
		dir := t.TempDir()
		if err := set.Write(dir); err != nil {
			t.Fatal(err)
		}
		if problems := checkFolder(dir, nil, []Catalog{c}, Options{}); len(problems) > 0 {
			t.Fatalf("template %q:\n%s", data, strings.Join(problems, "\n"))
		}
	})
}

// FuzzBuild: arbitrary references never panic; when Build accepts them the output
// passes the round-trip checker.
func FuzzBuild(f *testing.F) {
	f.Add("quay.io/ns/img@"+dg("a"), "m.example.com:5000/ns/img:"+tagFor(dg("a")), "quay.io/ns/other:v1", "m.example.com:5000/elsewhere/other:v1", "operator", 0, false)
	f.Add("nginx", "m.example.com/library/nginx:latest", "docker.io/library/busybox:1", "m.example.com/library/busybox:1", "generic", 600, true)
	f.Add("oci:///x", "m.example.com/x:1", "localhost:5000/a/b/c:1@"+dg("c"), "m.example.com/a/b/c:1", "", 0, false)
	f.Fuzz(func(t *testing.T, s1, d1, s2, d2, kind string, max int, repoScope bool) {
		if max < 0 || max > 1<<20 {
			max = 0
		}
		images := []Image{{Source: s1, Destination: d1, Kind: Kind(kind)}, {Source: s2, Destination: d2, Kind: KindGeneric}}
		opts := Options{MaxObjectBytes: max, RepositoryScope: repoScope}
		set, err := Build(images, []Catalog{{Source: s2, Destination: d2}}, opts)
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := set.Write(dir); err != nil {
			t.Fatal(err)
		}
		if problems := checkFolder(dir, images, []Catalog{{Source: s2, Destination: d2}}, opts); len(problems) > 0 {
			t.Fatalf("%q:\n%s", images, strings.Join(problems, "\n"))
		}
	})
}
