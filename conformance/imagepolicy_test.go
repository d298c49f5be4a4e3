package conformance

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/manifests"
)

// The ClusterImagePolicy CRD (the Default feature set: what a cluster serves
// without feature gates) joins the CRDs cluster resources are validated against.
func init() {
	crdSources = append(crdSources, struct{ module, path string }{
		"github.com/openshift/api", "config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_clusterimagepolicies-Default.crd.yaml",
	})
}

func publicKeyPEM(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// checkImagePolicy validates one ClusterImagePolicy document as the API server
// would (schema, CEL rules, list types) and decodes it strictly into
// openshift/api's Go type.
func checkImagePolicy(t *testing.T, doc []byte) []string {
	t.Helper()
	var problems []string
	for _, p := range validateObject(t, doc) {
		if !strings.HasPrefix(p, "typed decode: no Go type") { // decoded below
			problems = append(problems, p)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&configv1.ClusterImagePolicy{}); err != nil {
		problems = append(problems, "typed decode: "+err.Error())
	}
	return problems
}

// TestClusterImagePolicySchema: the ClusterImagePolicy objects airlock writes
// with --signature-key (300 repositories: split at the CRD's 256 scopes) are
// accepted by the real CRD, and the checks refuse what they should (a scope
// with a wildcard inside, a key that is not PEM, 257 scopes).
func TestClusterImagePolicySchema(t *testing.T) {
	key := publicKeyPEM(t)
	var images []manifests.Image
	for i := range 300 {
		images = append(images, manifests.Image{
			Source:      fmt.Sprintf("registry.example.com/team%d/app%d@sha256:%064d", i%7, i, i),
			Destination: fmt.Sprintf("mirror.example.com/m/team%d/app%d@sha256:%064d", i%7, i, i),
			Kind:        manifests.KindOperator,
		})
	}
	images = append(images, manifests.Image{Source: "quay.io/ns/tagged:v1", Destination: "mirror.example.com/m/ns/tagged:v1", Kind: manifests.KindGeneric})
	set, err := manifests.Build(images, nil, manifests.Options{SignatureKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(set.ClusterImagePolicies); n != 2 {
		t.Fatalf("%d ClusterImagePolicy objects for 301 repositories, want 2", n)
	}
	var good []byte
	for _, f := range set.Files() {
		if f.Kind != manifests.KindClusterImagePolicy {
			continue
		}
		doc, err := yaml.YAMLToJSONStrict(f.Data)
		if err != nil {
			t.Fatal(err)
		}
		if problems := checkImagePolicy(t, doc); len(problems) > 0 {
			t.Errorf("%s refused: %v", f.Name, problems)
		}
		good = doc
	}

	mutate := func(f func(o map[string]any)) []byte {
		var o map[string]any
		if err := json.Unmarshal(good, &o); err != nil {
			t.Fatal(err)
		}
		f(o)
		b, _ := json.Marshal(o)
		return b
	}
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
	for name, doc := range map[string][]byte{
		"wildcard inside a scope": mutate(func(o map[string]any) {
			spec(o)["scopes"] = []any{"registry.*.example.com/ns/app"}
		}),
		"key not PEM": mutate(func(o map[string]any) {
			spec(o)["policy"].(map[string]any)["rootOfTrust"].(map[string]any)["publicKey"] = map[string]any{"keyData": "bm90IGEga2V5"}
		}),
		"257 scopes": mutate(func(o map[string]any) {
			var s []any
			for i := range 257 {
				s = append(s, fmt.Sprintf("registry.example.com/ns/app%d", i))
			}
			spec(o)["scopes"] = s
		}),
	} {
		if problems := checkImagePolicy(t, doc); len(problems) == 0 {
			t.Errorf("%s: accepted, want refused", name)
		}
	}
}
