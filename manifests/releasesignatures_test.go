package manifests

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

func TestBuildReleaseSignatures(t *testing.T) {
	d1 := "sha256:" + strings.Repeat("1", 64)
	d2 := "sha256:" + strings.Repeat("2", 64)
	in := []ReleaseSignatures{
		{Digest: d2, Signatures: [][]byte{[]byte("second release, signature 1"), []byte("second release, signature 2")}},
		{Digest: d1, Signatures: [][]byte{{0x89, 0x01, 0x00, 0xff}}},
		{Digest: d2, Signatures: [][]byte{[]byte("second release, signature 1"), []byte("second release, signature 2")}},
	}
	cms, files, err := BuildReleaseSignatures(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(cms) != 2 || cms[0].Metadata.Name != "sha256-"+strings.Repeat("1", 64) || len(files) != 2 {
		t.Fatalf("%d ConfigMaps (first %q), %d files", len(cms), cms[0].Metadata.Name, len(files))
	}
	for _, f := range files {
		golden.Check(t, filepath.Join("testdata", "releasesignatures", f.Name+".golden"), f.Data)
	}
	// The YAML and the JSON hold the same objects; the input order does not matter.
	var list struct{ Items []ConfigMap }
	if err := json.Unmarshal(files[0].Data, &list); err != nil {
		t.Fatal(err)
	}
	var first ConfigMap
	doc, _, _ := strings.Cut(string(files[1].Data), "---\n")
	if err := yaml.Unmarshal([]byte(doc), &first); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || string(first.BinaryData["sha256-"+strings.Repeat("1", 64)+"-1"]) != "\x89\x01\x00\xff" ||
		first.Metadata.Labels[ReleaseSignatureLabel] != "" || first.Metadata.Namespace != "openshift-config-managed" {
		t.Errorf("read back: %+v, %+v", list.Items, first)
	}
	_, again, err := BuildReleaseSignatures([]ReleaseSignatures{in[1], in[0]})
	if err != nil || string(again[1].Data) != string(files[1].Data) {
		t.Errorf("not deterministic: %v", err)
	}
	// Accepted as an object of the cluster resources folder.
	if _, err := Build(nil, nil, Options{Objects: files}); err != nil {
		t.Errorf("Build with the signature files: %v", err)
	}
}

func TestBuildReleaseSignaturesErrors(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		name string
		in   []ReleaseSignatures
		want string
	}{
		{"bad digest", []ReleaseSignatures{{Digest: "sha256:abc", Signatures: [][]byte{{1}}}}, "not sha256:<64 hex digits>"},
		{"no signature", []ReleaseSignatures{{Digest: d}}, "none given"},
		{"conflict", []ReleaseSignatures{{Digest: d, Signatures: [][]byte{{1}}}, {Digest: d, Signatures: [][]byte{{2}}}}, "given twice, differently"},
		{"over etcd's limit", []ReleaseSignatures{{Digest: d, Signatures: [][]byte{make([]byte, 400000), make([]byte, 400000)}}}, "over the 1000000"},
	} {
		if _, _, err := BuildReleaseSignatures(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if cms, files, err := BuildReleaseSignatures(nil); err != nil || cms != nil || files != nil {
		t.Errorf("nothing: %v %v %v", cms, files, err)
	}
}
