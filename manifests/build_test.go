package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCatalogNames(t *testing.T) {
	c := goldenCases(t)[3]
	set, err := Build(nil, c.catalogs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cs := range set.CatalogSources {
		names = append(names, cs.Name+"="+cs.Image)
		if len(cs.Name) > 63 || !dns1123Label.MatchString(cs.Name) {
			t.Errorf("bad name %q", cs.Name)
		}
	}
	// Sorted by destination; a clash gets -1, -2 (a base that already ends in "-1" after
	// truncation makes the next free suffix -2).
	want := []string{
		"cs-a-very-long-catalog-repository-name-that-goes-on-and-on-v4-1=mirror.example.com:5000/acme/a-very-long-catalog-repository-name-that-goes-on-and-on:v4.16.0-202401010000",
		"cs-certified-" + dg("cert")[7:19] + "=mirror.example.com:5000/acme/certified@" + dg("cert"),
		"cs-redhat-operator-index-v4-16=mirror.example.com:5000/acme/redhat-operator-index:v4.16",
		"cs-redhat-operator-index-v4-16-1=" + mirrorNS + "/redhat/redhat-operator-index:v4.16",
		"cs-my-catalog-index-" + dg("local")[7:19] + "=mirror.example.com:5000/local/my__catalog.index@" + dg("local"),
		"cs-a-very-long-catalog-repository-name-that-goes-on-and-on-v4-2=mirror.example.com:5000/other/a-very-long-catalog-repository-name-that-goes-on-and-on:v4.16.0-202401010000",
	}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Errorf("names:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	// Template: kept fields, overwritten fields, dropped server fields.
	var tmplCS CatalogSource
	for _, cs := range set.CatalogSources {
		if cs.Image == mirrorNS+"/redhat/redhat-operator-index:v4.16" {
			tmplCS = cs
		}
	}
	spec := tmplCS.Object["spec"].(map[string]any)
	meta := tmplCS.Object["metadata"].(map[string]any)
	if spec["displayName"] != "Platform operators" || spec["sourceType"] != "grpc" || meta["namespace"] != CatalogNamespace ||
		meta["name"] != tmplCS.Name || fmt.Sprint(spec["priority"]) != "-100" || meta["uid"] != nil || tmplCS.Object["status"] != nil {
		t.Errorf("template not honoured: %v", tmplCS.Object)
	}
	if us := spec["updateStrategy"].(map[string]any)["registryPoll"].(map[string]any)["interval"]; us != "2h" {
		t.Errorf("template interval replaced: %v", us)
	}
}

func TestTemplateErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"wrong-kind.yaml", `kind is "Subscription", want "CatalogSource"`},
		{"configmap.yaml", "spec.configMap is set"},
		{"broken.yaml", "not valid YAML"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, path := readTemplate(t, tc.file)
			_, err := Build(nil, []Catalog{{Source: "quay.io/a/b:1", Destination: "m.example.com/a/b:1", Template: data, TemplatePath: path}}, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, path, tc.want)
			}
		})
	}
	for _, tc := range []struct{ tmpl, want string }{
		{"- a\n- b\n", "got a list"},
		{"apiVersion: v1\nkind: CatalogSource\n", `apiVersion is "v1"`},
		{"apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nspec: 3\n", "spec must be a mapping"},
		{"apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nspec:\n  address: 1.2.3.4:50051\n", "spec.address is set"},
		{"apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nkind: CatalogSource\n", "not valid YAML"},
	} {
		_, err := parseTemplate([]byte(tc.tmpl), "t.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.tmpl, err, tc.want)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		images []Image
		cats   []Catalog
		opts   Options
		want   string
	}{
		{"bad source", []Image{{Source: "quay.io/UPPER/x@sha256:zz", Destination: "m.example.com/x:1", Kind: KindOperator}}, nil, Options{}, `image "quay.io/UPPER/x@sha256:zz": invalid source reference`},
		{"bad destination", []Image{{Source: "quay.io/a/x:1", Destination: "", Kind: KindOperator}}, nil, Options{}, "invalid destination reference"},
		{"kind that cannot name an object", []Image{{Source: "quay.io/a/x:1", Destination: "m.example.com/a/x:1", Kind: "Helm Charts"}}, nil, Options{}, `kind "Helm Charts" cannot name a mirror set`},
		{"bad catalog destination", nil, []Catalog{{Source: "quay.io/a/c:1", Destination: "not a ref"}}, Options{}, `catalog "quay.io/a/c:1": invalid destination reference`},
		{"rule over the limit", []Image{mirrored("quay.io/a/x@"+dg("x"), KindOperator)}, nil, Options{MaxObjectBytes: 100}, "more than the 100-byte object limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.images, tc.cats, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestKindsOfContent: every kind of content gets mirror sets of its own
// (idms-KIND, itms-KIND, icsp/icsp-KIND), and a repository several kinds
// share goes to the first: operator, then the other kinds by name, generic last.
func TestKindsOfContent(t *testing.T) {
	images := []Image{
		mirrored("quay.io/rel/payload@"+dg("p"), "release"),
		mirrored("quay.io/rel/payload:4.18.1", "release"),
		mirrored("quay.io/charts/podinfo@"+dg("c"), "helm"),
		mirrored("quay.io/charts/podinfo@"+dg("d"), KindGeneric),
		mirrored("quay.io/shared/x@"+dg("x"), "release"),
		mirrored("quay.io/shared/x@"+dg("y"), KindOperator),
	}
	s, err := Build(images, nil, Options{RepositoryScope: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range s.Files() {
		switch f.Kind {
		case KindIDMS, KindITMS, KindICSP:
			got[f.ObjectName] = append(got[f.ObjectName], f.Name)
		}
	}
	for _, want := range []string{"idms-release-0", "itms-release-0", "icsp-release-0", "idms-helm-0", "icsp-helm-0", "idms-operator-0"} {
		if got[want] == nil {
			t.Errorf("no object %s; got %v", want, got)
		}
	}
	for _, idms := range s.ImageDigestMirrorSets {
		for _, r := range idms.Spec.ImageDigestMirrors {
			switch r.Source {
			case "quay.io/shared/x":
				if idms.Metadata.Name != "idms-operator-0" {
					t.Errorf("%s is in %s, want idms-operator-0 (operator goes first)", r.Source, idms.Metadata.Name)
				}
			case "quay.io/charts/podinfo":
				if idms.Metadata.Name != "idms-helm-0" {
					t.Errorf("%s is in %s, want idms-helm-0 (a named kind before generic)", r.Source, idms.Metadata.Name)
				}
			}
		}
	}
	if got["idms-generic-0"] != nil {
		t.Errorf("an empty generic mirror set was written: %v", got["idms-generic-0"])
	}
}

func TestDeterministic(t *testing.T) {
	c := goldenCases(t)
	images := append(baseImages(), c[2].images...)
	cats := append(baseCatalogs(), c[3].catalogs...)
	first, err := Build(images, cats, Options{MaxObjectBytes: 3000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		// Reverse and rotate the input: order must not matter.
		im := append([]Image(nil), images...)
		ca := append([]Catalog(nil), cats...)
		for a, b := 0, len(im)-1; a < b; a, b = a+1, b-1 {
			im[a], im[b] = im[b], im[a]
		}
		im = append(im[i:], im[:i]...)
		ca = append(ca[len(ca)-1-i%len(ca):], ca[:len(ca)-1-i%len(ca)]...)
		again, err := Build(im, ca, Options{MaxObjectBytes: 3000})
		if err != nil {
			t.Fatal(err)
		}
		f1, f2 := first.Files(), again.Files()
		if len(f1) != len(f2) {
			t.Fatalf("run %d: %d files, first run %d", i, len(f2), len(f1))
		}
		for j := range f1 {
			if f1[j].Name != f2[j].Name || !bytes.Equal(f1[j].Data, f2[j].Data) {
				t.Fatalf("run %d: %s differs", i, f1[j].Name)
			}
		}
	}
}

func TestWriteRemovesOnlyOwnedFiles(t *testing.T) {
	dir := t.TempDir()
	c := goldenCases(t)
	big, err := Build(c[2].images, nil, c[2].opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Write(dir); err != nil {
		t.Fatal(err)
	}
	keep := map[string]string{
		"notes.md":              "mine",
		"idms-operator-0.yml":   "not .yaml: not ours",
		"icsp/user-policy.yaml": "not icsp-*: not ours",
		"sub/cs-x.yaml":         "sub-folder: not ours",
	}
	for name, data := range keep {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	small, err := Build(nil, baseCatalogs(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := small.Write(dir); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	want := map[string]bool{}
	for _, f := range small.Files() {
		want[f.Name] = true
	}
	for name := range keep {
		want[name] = true
	}
	for name := range got {
		if !want[name] {
			t.Errorf("stale %s left behind", name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	// No ICSP in the small run and no foreign file left in icsp/ → folder removed.
	if err := os.Remove(filepath.Join(dir, "icsp", "user-policy.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := small.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "icsp")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty icsp/ kept: %v", err)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".airlock-*")); len(ents) > 0 {
		t.Errorf("temporary files left: %v", ents)
	}
}

func TestWriteErrorNamesPath(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := Build(nil, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Write(filepath.Join(f, "sub")); err == nil || !strings.Contains(err.Error(), "cluster resources folder") {
		t.Fatalf("error %v", err)
	}
}

// TestSourceObjects: objects a content source built are written with the
// rest, listed in README.txt, refused under a name another file takes, and
// removed by the next Write that does not have them.
func TestSourceObjects(t *testing.T) {
	obj := File{Name: "updateservice.yaml", APIVersion: "updateservice.operator.openshift.io/v1", Kind: "UpdateService", ObjectName: "airlock", Data: []byte("kind: UpdateService\n")}
	dir := t.TempDir()
	s, err := Build([]Image{mirrored("quay.io/a/x@"+dg("x"), KindGeneric)}, nil, Options{Objects: []File{obj}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, obj.Name)); err != nil || string(b) != string(obj.Data) {
		t.Fatalf("object written as %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ReadmeName)); !strings.Contains(string(b), obj.Name) {
		t.Errorf("README.txt does not list %s:\n%s", obj.Name, b)
	}
	for _, bad := range []string{"idms-generic-0.yaml", "../escape.yaml", "notes.txt", ".hidden.yaml"} {
		if _, err := Build(nil, nil, Options{Objects: []File{{Name: bad}}}); err == nil {
			t.Errorf("object named %q accepted", bad)
		}
	}
	s, err = Build([]Image{mirrored("quay.io/a/x@"+dg("x"), KindGeneric)}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, obj.Name)); !os.IsNotExist(err) {
		t.Errorf("the stale object is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, writtenList)); !os.IsNotExist(err) {
		t.Errorf("the list of written objects stayed: %v", err)
	}
}
