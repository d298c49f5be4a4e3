package payload

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// refs replace the template's placeholders with references by digest.
var refs = strings.NewReplacer(
	"{{.Ref1}}", "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:"+strings.Repeat("1", 64),
	"{{.Ref2}}", "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:"+strings.Repeat("2", 64),
	"{{.Ref3}}", "quay.io/openshift-release-dev/ocp-v4.0-art-dev:4.15@sha256:"+strings.Repeat("3", 64),
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRead reads oc-mirror's payload fixtures (testdata/SOURCES.md) into one
// Payload, checked against a golden.
func TestRead(t *testing.T) {
	fsys := fstest.MapFS{
		ImageReferencesFile: {Data: []byte(refs.Replace(string(read(t, "image-references.template"))))},
		MetadataFile:        {Data: read(t, "release-metadata")},
		BootImagesFile:      {Data: read(t, "0000_50_installer_coreos-bootimages.yaml")},
	}
	p, err := Read(fsys)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := p.KubeVirtImage("amd64")
	if err != nil {
		t.Fatal(err)
	}
	out := struct {
		*Payload
		BootImages    int
		KubeVirtImage string
	}{p, len(p.BootImages), kv}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/read.golden.json", append(b, '\n'))
	if c, ok := p.Component("component2"); !ok || c.Digest.Encoded() != strings.Repeat("2", 64) {
		t.Errorf("Component(component2) = %+v, %v", c, ok)
	}
}

func TestReadErrors(t *testing.T) {
	good := []byte(refs.Replace(string(read(t, "image-references.template"))))
	md := read(t, "release-metadata")
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"no image-references", fstest.MapFS{MetadataFile: {Data: md}}, "release-manifests/image-references: open"},
		{"version contradicts", fstest.MapFS{ImageReferencesFile: {Data: good}, MetadataFile: {Data: []byte(strings.Replace(string(md), `"version": "4.15.0"`, `"version": "4.15.1"`, 1))}}, "says version 4.15.1 but release-manifests/image-references is named 4.15.0"},
		{"bad metadata", fstest.MapFS{ImageReferencesFile: {Data: good}, MetadataFile: {Data: []byte(`{"kind":"x"}`)}}, `release-manifests/release-metadata: invalid release payload: kind "x"`},
		{"no version anywhere", fstest.MapFS{ImageReferencesFile: {Data: []byte(strings.Replace(string(good), `"name": "4.15.0"`, `"name": ""`, 1))}}, "names the release's version"},
		{"by tag", fstest.MapFS{ImageReferencesFile: {Data: read(t, "image-references-by-tag")}}, `spec.tags[0] (alpine): from.name: "quay.io/oc-mirror/release/test-image:v0.0.1" is not a reference by digest`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.fsys)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Errorf("Read: %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

func TestParseImageReferencesErrors(t *testing.T) {
	const head = `{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"4.1.0"},"spec":{"tags":[`
	d := "quay.io/a/b@sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct{ in, want string }{
		{`[]`, "not an ImageStream in JSON"},
		{`{"kind":"ConfigMap","apiVersion":"v1"}`, `kind "ConfigMap" apiVersion "v1"`},
		{head + `]}}`, "spec.tags lists no component"},
		{head + `{"name":"a b","from":{"kind":"DockerImage","name":"` + d + `"}}]}}`, `spec.tags[0]: name "a b" is not usable in a tag`},
		{head + `{"name":"a","from":{"kind":"DockerImage","name":"` + d + `"}},{"name":"a","from":{"kind":"DockerImage","name":"` + d + `"}}]}}`, "spec.tags[1] (a): a second tag of that name"},
		{head + `{"name":"a","from":{"kind":"ImageStreamTag","name":"x:y"}}]}}`, "spec.tags[0] (a): from must be a DockerImage"},
		{head + `{"name":"a"}]}}`, "spec.tags[0] (a): from must be a DockerImage"},
		{head + `{"name":"a","from":{"kind":"DockerImage","name":"quay.io/a/b@sha256:12"}}]}}`, "spec.tags[0] (a): from.name: \"quay.io/a/b@sha256:12\" is not an image reference"},
		{head + `{"name":"a","from":{"kind":"DockerImage","name":"` + d + `"}}]}}{}`, "more than one JSON document"},
	} {
		if _, err := ParseImageReferences([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseImageReferences(%.60s…): %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseMetadataErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`nope`, "not release metadata in JSON"},
		{`{"kind":"cincinnati-metadata-v0","version":"4.15"}`, `version "4.15" is not semver`},
		{`{"kind":"cincinnati-metadata-v0","version":"4.15.0"} {}`, "more than one JSON document"},
		{`{"version":"4.15.0"}`, `kind ""`},
	} {
		if _, err := ParseMetadata([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseMetadata(%s): %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestKubeVirtImage(t *testing.T) {
	b := read(t, "0000_50_installer_coreos-bootimages.yaml")
	const want = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:729265d5ef6ed6a45bcd55c46877e3acb9eae3f49c78cd795d5b53aa85e3775b"
	for _, arch := range []string{"amd64", "x86_64"} {
		if got, err := KubeVirtImage(b, arch); err != nil || got != want {
			t.Errorf("KubeVirtImage(%s) = %s, %v", arch, got, err)
		}
	}
	for _, tc := range []struct {
		in   []byte
		arch string
		want string
	}{
		{b, "arm64", "no architectures.aarch64.images.kubevirt.digest-ref"},
		{b, "multi", `no boot images for architecture "multi"`},
		{b, "mips", `no boot images for architecture "mips"`},
		{[]byte("kind: Secret\n"), "amd64", `kind "Secret", want ConfigMap`},
		{[]byte("kind: ConfigMap\ndata: {}\n"), "amd64", "data.stream is empty"},
		{[]byte("kind: ConfigMap\ndata:\n  stream: '{'\n"), "amd64", "data.stream is not JSON"},
		{[]byte("kind: ConfigMap\ndata:\n  stream: '{\"architectures\":{\"x86_64\":{\"images\":{\"kubevirt\":{\"digest-ref\":\"quay.io/a:tag\"}}}}}'\n"), "amd64", "is not a reference by digest"},
		{[]byte(":\n-"), "amd64", "not a ConfigMap in YAML"},
	} {
		if _, err := KubeVirtImage(tc.in, tc.arch); err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("KubeVirtImage(%.30q, %s): %v, want %q", tc.in, tc.arch, err, tc.want)
		}
	}
	if _, err := (&Payload{}).KubeVirtImage("amd64"); err == nil || !strings.Contains(err.Error(), "the payload has no "+BootImagesFile) {
		t.Errorf("a payload without boot images: %v", err)
	}
}

func TestArchName(t *testing.T) {
	for in, want := range map[string]string{"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x", "multi": "multi"} {
		if got, ok := ArchName(in); !ok || got != want {
			t.Errorf("ArchName(%s) = %s, %v, want %s", in, got, ok, want)
		}
	}
	if _, ok := ArchName("riscv64"); ok {
		t.Error("ArchName(riscv64) is known")
	}
}
