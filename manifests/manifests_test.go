package manifests

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// dg returns a deterministic sha256 digest for a seed string.
func dg(seed string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(seed)))
}

// tagFor is the sha256-<hex> tag the planner gives digest-only sources.
func tagFor(d string) string { return strings.Replace(d, ":", "-", 1) }

const mirrorNS = "mirror.example.com:5000/airlock"

// mirrored maps a source to REG/NS + its path, the default destination rule.
func mirrored(src string, kind Kind) Image {
	r, err := parseRef(src)
	if err != nil {
		panic(err)
	}
	path := r.repo[strings.IndexByte(r.repo, '/')+1:]
	dest := mirrorNS + "/" + path
	d := r.digest
	if d == "" {
		d = dg(src)
	}
	if r.tag != "" {
		dest += ":" + r.tag
	} else {
		dest += ":" + tagFor(d)
	}
	return Image{Source: src, Destination: dest, Digest: d, Kind: kind}
}

func readTemplate(t testing.TB, name string) ([]byte, string) {
	t.Helper()
	p := filepath.Join("testdata", "templates", name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data, p
}

// baseImages is a realistic mapping: bundles and related images of two catalogs, plus
// additionalImages by tag, by digest, with a targetRepo, and from an OCI layout.
func baseImages() []Image {
	imgs := []Image{
		mirrored("registry.redhat.io/rhacs/rhacs-operator-bundle@"+dg("acs-bundle"), KindOperator),
		mirrored("registry.redhat.io/rhacs/rhacs-main-rhel8@"+dg("acs-main"), KindOperator),
		mirrored("registry.redhat.io/rhacs/rhacs-rhel8-operator@"+dg("acs-op"), KindOperator),
		mirrored("registry.redhat.io/openshift4/ose-kube-rbac-proxy@"+dg("rbac"), KindOperator),
		mirrored("registry.redhat.io/openshift4/ose-kube-rbac-proxy-rhel9@"+dg("rbac9"), KindOperator),
		mirrored("registry.redhat.io/ubi9/ubi-minimal@"+dg("ubi-min"), KindOperator),
		mirrored("quay.io/operatorhubio/etcd:v0.9.4@"+dg("etcd"), KindOperator),
		mirrored("quay.io/coreos/etcd-operator@"+dg("etcd-op"), KindOperator),
		// The same repository used by digest (operator) and by tag (additionalImages).
		mirrored("registry.redhat.io/ubi9/ubi@"+dg("ubi"), KindOperator),
		mirrored("registry.redhat.io/ubi9/ubi:9.4", KindGeneric),
		// additionalImages.
		mirrored("docker.io/library/busybox:1.36", KindGeneric),
		mirrored("nginx:1.27", KindGeneric), // normalised to docker.io/library/nginx
		mirrored("ghcr.io/stefanprodan/podinfo@"+dg("podinfo"), KindGeneric),
		mirrored("quay.io/prometheus/prometheus:v2.53.0", KindGeneric),
		// targetRepo: node-exporter goes elsewhere, so quay.io/prometheus cannot collapse.
		{Source: "quay.io/prometheus/node-exporter:v1.8.0", Destination: "mirror.example.com:5000/custom/node-exporter:v1.8.0", Kind: KindGeneric},
		// Nested source path.
		mirrored("quay.io/openshift-community-operators/nested/tool@"+dg("nested"), KindGeneric),
		// Not a registry reference: no rule.
		{Source: "oci:///srv/images/tool", Destination: mirrorNS + "/srv/images/tool:latest", Kind: KindGeneric},
		// Catalog images: never in a mirror set.
		{Source: "registry.redhat.io/redhat/redhat-operator-index:v4.16", Destination: mirrorNS + "/redhat/redhat-operator-index:v4.16", Digest: dg("rh-index"), Kind: KindCatalog},
	}
	return imgs
}

func baseCatalogs() []Catalog {
	return []Catalog{
		{Source: "registry.redhat.io/redhat/redhat-operator-index:v4.16", Destination: mirrorNS + "/redhat/redhat-operator-index:v4.16", Digest: dg("rh-index-rebuilt"), DisplayName: "Red Hat Operators", Publisher: "Red Hat"},
		{Source: "quay.io/operatorhubio/catalog:latest", Destination: mirrorNS + "/operatorhubio/catalog:latest", Digest: dg("ohio")},
	}
}

type goldenCase struct {
	name     string
	images   []Image
	catalogs []Catalog
	opts     Options
}

func goldenCases(t testing.TB) []goldenCase {
	tmpl, tmplPath := readTemplate(t, "catalogsource.yaml")
	var many []Image
	for i := 0; i < 40; i++ {
		many = append(many, mirrored(fmt.Sprintf("registry.example.com/team%02d/app@%s", i%8, dg(fmt.Sprint(i))), KindOperator))
		many = append(many, Image{Source: fmt.Sprintf("registry.example.com/extra/tool%02d:v1", i), Destination: fmt.Sprintf("mirror.example.com:5000/extra-%02d/tool%02d:v1", i, i), Kind: KindGeneric})
	}
	return []goldenCase{
		{name: "namespace-scope", images: baseImages(), catalogs: baseCatalogs()},
		{name: "repository-scope", images: baseImages(), catalogs: baseCatalogs(), opts: Options{RepositoryScope: true}},
		{name: "split", images: many, opts: Options{MaxObjectBytes: 1500}},
		{name: "template", catalogs: []Catalog{
			{Source: "registry.redhat.io/redhat/redhat-operator-index:v4.16", Destination: mirrorNS + "/redhat/redhat-operator-index:v4.16", Template: tmpl, TemplatePath: tmplPath},
			// Same repository name and tag from another registry: the name gets -1.
			{Source: "quay.io/acme/redhat-operator-index:v4.16", Destination: "mirror.example.com:5000/acme/redhat-operator-index:v4.16"},
			// Digest only: the name uses 12 hex digits; no poll interval in the ClusterCatalog.
			{Source: "quay.io/acme/certified@" + dg("cert"), Destination: "mirror.example.com:5000/acme/certified@" + dg("cert")},
			// No tag, no digest in the destination: the digest is appended.
			{Source: "oci:///srv/catalogs/local", Destination: "mirror.example.com:5000/local/my__catalog.index", Digest: dg("local")},
			// A name far over 63 characters, twice.
			{Source: "quay.io/acme/a-very-long-catalog-repository-name-that-goes-on-and-on:v4.16.0-202401010000", Destination: "mirror.example.com:5000/acme/a-very-long-catalog-repository-name-that-goes-on-and-on:v4.16.0-202401010000"},
			{Source: "quay.io/other/a-very-long-catalog-repository-name-that-goes-on-and-on:v4.16.0-202401010000", Destination: "mirror.example.com:5000/other/a-very-long-catalog-repository-name-that-goes-on-and-on:v4.16.0-202401010000"},
		}},
		{name: "empty"},
	}
}

// readTree returns every file under dir by slash-separated relative path.
func readTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			set, err := Build(tc.images, tc.catalogs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := set.Write(dir); err != nil {
				t.Fatal(err)
			}
			for _, p := range checkFolder(dir, tc.images, tc.catalogs, tc.opts) {
				t.Error(p)
			}
			got := readTree(t, dir)
			goldenDir := filepath.Join("testdata", "golden", tc.name)
			if golden.Updating() {
				if err := os.RemoveAll(goldenDir); err != nil {
					t.Fatal(err)
				}
				for name, data := range got {
					p := filepath.Join(goldenDir, filepath.FromSlash(name))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			want := readTree(t, goldenDir)
			for name, data := range want {
				if g, ok := got[name]; !ok {
					t.Errorf("%s: not written", name)
				} else if !bytes.Equal(g, data) {
					t.Errorf("%s differs from golden (run go test ./manifests -update and review the diff)\n--- got\n%s\n--- want\n%s", name, g, data)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s: written but not in golden", name)
				}
			}
			// Files() matches what Write wrote.
			files := set.Files()
			if len(files) != len(got) {
				t.Errorf("Files() lists %d files, Write wrote %d", len(files), len(got))
			}
			for _, f := range files {
				if !bytes.Equal(got[f.Name], f.Data) {
					t.Errorf("Files() entry %s differs from the written file", f.Name)
				}
			}
		})
	}
}

// TestScopeAndSplitShape pins the decisions the golden files show, so a -update that
// silently changes them fails here.
func TestScopeAndSplitShape(t *testing.T) {
	cases := goldenCases(t)
	sources := func(s *Set) map[string][]string {
		out := map[string][]string{}
		for _, o := range s.ImageDigestMirrorSets {
			for _, r := range o.Spec.ImageDigestMirrors {
				out["idms "+r.Source] = r.Mirrors
			}
		}
		for _, o := range s.ImageTagMirrorSets {
			for _, r := range o.Spec.ImageTagMirrors {
				out["itms "+r.Source] = r.Mirrors
			}
		}
		return out
	}
	ns, err := Build(cases[0].images, cases[0].catalogs, cases[0].opts)
	if err != nil {
		t.Fatal(err)
	}
	got := sources(ns)
	for key, want := range map[string]string{
		"idms registry.redhat.io/rhacs":                     mirrorNS + "/rhacs",
		"idms registry.redhat.io/openshift4":                mirrorNS + "/openshift4",
		"idms quay.io/operatorhubio":                        mirrorNS + "/operatorhubio",
		"itms docker.io/library":                            mirrorNS + "/library",
		"itms quay.io/prometheus/prometheus":                mirrorNS + "/prometheus/prometheus",
		"itms quay.io/prometheus/node-exporter":             "mirror.example.com:5000/custom/node-exporter",
		"idms quay.io/openshift-community-operators/nested": mirrorNS + "/openshift-community-operators/nested",
		"itms registry.redhat.io/ubi9":                      mirrorNS + "/ubi9",
		"idms registry.redhat.io/ubi9":                      mirrorNS + "/ubi9",
		"idms ghcr.io/stefanprodan":                         mirrorNS + "/stefanprodan",
		"idms quay.io/coreos":                               mirrorNS + "/coreos",
	} {
		if m := got[key]; len(m) != 1 || m[0] != want {
			t.Errorf("%s: mirrors %v, want [%s]", key, m, want)
		}
	}
	if len(got) != 11 {
		t.Errorf("got %d rules, want 11: %v", len(got), got)
	}
	for _, o := range ns.ImageDigestMirrorSets {
		for _, r := range o.Spec.ImageDigestMirrors {
			if strings.Contains(r.Source, "redhat-operator-index") || strings.Contains(r.Source, "/redhat") {
				t.Errorf("catalog repository in IDMS: %s", r.Source)
			}
		}
	}
	if len(ns.Skipped) != 1 || ns.Skipped[0] != "oci:///srv/images/tool" {
		t.Errorf("Skipped = %v", ns.Skipped)
	}
	// ubi9 is used by operator (digest) and generic (tag): the digest rule is in the
	// operator object, the tag rule in the generic one.
	names := map[string]string{}
	for _, o := range ns.ImageDigestMirrorSets {
		for _, r := range o.Spec.ImageDigestMirrors {
			names["idms "+r.Source] = o.Metadata.Name
		}
	}
	for _, o := range ns.ImageTagMirrorSets {
		for _, r := range o.Spec.ImageTagMirrors {
			names["itms "+r.Source] = o.Metadata.Name
		}
	}
	if names["idms registry.redhat.io/ubi9"] != "idms-operator-0" || names["itms registry.redhat.io/ubi9"] != "itms-generic-0" || names["idms ghcr.io/stefanprodan"] != "idms-generic-0" {
		t.Errorf("object assignment: %v", names)
	}

	repo, err := Build(cases[1].images, cases[1].catalogs, cases[1].opts)
	if err != nil {
		t.Fatal(err)
	}
	for key := range sources(repo) {
		src := strings.Fields(key)[1]
		if strings.Count(src, "/") < 2 {
			t.Errorf("repository scope produced namespace rule %s", key)
		}
	}
	if n := len(sources(repo)); n != 16 {
		t.Errorf("repository scope: %d rules, want 16 (11 digest, 5 tag)", n)
	}

	split, err := Build(cases[2].images, cases[2].catalogs, cases[2].opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(split.ImageTagMirrorSets) < 3 || len(split.ImageContentSourcePolicies) != len(split.ImageDigestMirrorSets) {
		t.Errorf("split: %d ITMS, %d IDMS, %d ICSP", len(split.ImageTagMirrorSets), len(split.ImageDigestMirrorSets), len(split.ImageContentSourcePolicies))
	}
	total := 0
	for i, o := range split.ImageTagMirrorSets {
		if want := fmt.Sprintf("itms-generic-%d", i); o.Metadata.Name != want {
			t.Errorf("split name %s, want %s", o.Metadata.Name, want)
		}
		total += len(o.Spec.ImageTagMirrors)
	}
	if total != 40 {
		t.Errorf("split ITMS hold %d rules, want 40", total)
	}
	// Packing is tight: each object but the last would overflow with the next rule.
	objs := split.ImageTagMirrorSets
	for i := 0; i+1 < len(objs); i++ {
		more := append(append([]MirrorRule(nil), objs[i].Spec.ImageTagMirrors...), objs[i+1].Spec.ImageTagMirrors[0])
		_, data, err := renderITMS(objs[i].Metadata.Name, more)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) <= cases[2].opts.MaxObjectBytes {
			t.Errorf("%s: the next rule would still fit (%d bytes)", objs[i].Metadata.Name, len(data))
		}
	}
	// The split is also exact at scale with the default limit.
	var huge []Image
	for i := 0; i < 2500; i++ {
		huge = append(huge, Image{Source: fmt.Sprintf("registry.example.com/ns%d/a-rather-long-repository-name-%d:v1", i, i), Destination: fmt.Sprintf("mirror.example.com:5000/flat/ns%d-a-rather-long-repository-name-%d:v1", i, i)})
	}
	hs, err := Build(huge, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs.ImageTagMirrorSets) < 2 {
		t.Fatalf("2500 rules in %d object(s)", len(hs.ImageTagMirrorSets))
	}
	for _, f := range hs.Files() {
		if len(f.Data) > DefaultMaxObjectBytes || (f.Kind == KindITMS && f.Name != fmt.Sprintf("itms-generic-%d.yaml", len(hs.ImageTagMirrorSets)-1) && len(f.Data) < DefaultMaxObjectBytes-500) {
			t.Errorf("%s: %d bytes", f.Name, len(f.Data))
		}
	}
	// Eight team namespaces collapse: one IDMS, 8 rules, under the limit.
	if len(split.ImageDigestMirrorSets) != 1 || len(split.ImageDigestMirrorSets[0].Spec.ImageDigestMirrors) != 8 {
		t.Errorf("split IDMS: %+v", split.ImageDigestMirrorSets)
	}
}
