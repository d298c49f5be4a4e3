package manifests

import (
	"fmt"
	"testing"
)

// Counting a rule without serialising it (plainCost) gives what serialising
// it gives; names YAML would quote are serialised.
func TestRuleCostsWithoutSerialising(t *testing.T) {
	cases := []struct {
		name  string
		rules []MirrorRule
		plain bool
	}{
		{"repository-scoped", []MirrorRule{
			{Source: "registry.redhat.io/rhel9/postgresql-15", Mirrors: []string{"mirror.example:5000/ns/rhel9/postgresql-15"}},
			{Source: "127.0.0.1:5793/scale/vendor-01/app-0001", Mirrors: []string{"127.0.0.1:41235/mirror/scale/vendor-01/app-0001", "other.example/a_b/c.d-e"}},
		}, true},
		{"namespace-scoped", []MirrorRule{{Source: "quay.io/openshift-release-dev", Mirrors: []string{"reg.example/ocp"}}}, true},
		{"upper case", []MirrorRule{{Source: "Reg.example/a", Mirrors: []string{"reg.example/b"}}}, false},
		{"no slash", []MirrorRule{{Source: "registry", Mirrors: []string{"reg.example/b"}}}, false},
		{"a number", []MirrorRule{{Source: "reg.example/a", Mirrors: []string{"1.5"}}}, false},
		{"a trailing colon", []MirrorRule{{Source: "reg.example/a:", Mirrors: []string{"reg.example/b"}}}, false},
		{"no mirror", []MirrorRule{{Source: "reg.example/a"}}, false},
	}
	for i := 0; i < 50; i++ {
		cases[0].rules = append(cases[0].rules, MirrorRule{Source: fmt.Sprintf("src.example:%d/ns-%d/app.%d", 5000+i, i, i), Mirrors: []string{fmt.Sprintf("dst.example/m/ns-%d/app_%d", i, i)}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range tc.rules {
				if _, ok := plainCost(r); ok != tc.plain {
					t.Errorf("plainCost(%+v) counted: %v, want %v", r, ok, tc.plain)
				}
			}
			got, err := ruleCosts(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			want, err := yamlCosts(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("costs %v, serialised %v", got, want)
			}
		})
	}
}
