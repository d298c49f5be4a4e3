package conformance

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/manifests"
)

// TestUpdateServiceSchema: the UpdateService airlock writes for graph: true
// is accepted by the OpenShift Update Service operator's CRD, and the check
// refuses what the CRD does (no graph-data image, replicas below 1, a field
// the operator does not know, a replicas count that is not a number).
func TestUpdateServiceSchema(t *testing.T) {
	_, f, err := manifests.BuildUpdateService("mirror.example.com:5000/m/openshift/release-images", "mirror.example.com:5000/m/openshift/graph-image@sha256:"+strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yaml.YAMLToJSONStrict(f.Data)
	if err != nil {
		t.Fatal(err)
	}
	if p := validateObject(t, doc); len(p) > 0 {
		t.Fatalf("the UpdateService is refused: %v\n%s", p, f.Data)
	}
	// What a run writes (pipeline's golden, hosts and digest as names).
	found := 0
	for _, o := range readClusterResources(t, "../pipeline/testdata/release") {
		if o.kind == "UpdateService" {
			found++
			for _, p := range validateObject(t, o.doc) {
				t.Errorf("%s: refused: %s", o.file, p)
			}
		}
	}
	if found != 1 {
		t.Errorf("pipeline/testdata/release holds %d UpdateServices, want 1", found)
	}
	ok := string(doc)
	cases := []struct{ name, doc, want string }{
		{"no graph-data image", strings.Replace(ok, `"graphDataImage":`, `"graphDataImagex":`, 1), "graphDataImage"},
		{"no replica", strings.Replace(ok, `"replicas":2`, `"replicas":0`, 1), "spec.replicas"},
		{"replicas as text", strings.Replace(ok, `"replicas":2`, `"replicas":"2"`, 1), "spec.replicas"},
		{"unknown field", strings.Replace(ok, `"releases":`, `"channel":"stable","releases":`, 1), "unknown field"},
		{"without namespace", strings.Replace(ok, `,"namespace":"openshift-update-service"`, ``, 1), "metadata.namespace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.doc == ok {
				t.Fatalf("the mutation changed nothing:\n%s", ok)
			}
			p := validateObject(t, []byte(c.doc))
			if len(p) == 0 {
				t.Fatalf("accepted:\n%s", c.doc)
			}
			if !strings.Contains(strings.Join(p, "\n"), c.want) {
				t.Errorf("refused, but not for %q: %v", c.want, p)
			}
		})
	}
}
