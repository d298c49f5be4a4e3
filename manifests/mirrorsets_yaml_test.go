package manifests

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// mirrorSetObjects returns the three mirror-set objects of rs, as the render
// functions build them, with their direct serialisation's arguments.
func mirrorSetObjects(name string, rs []MirrorRule) []struct {
	obj      any
	kind     string
	version  string
	operator bool
	field    string
} {
	idms := ImageDigestMirrorSet{APIVersion: APIVersionConfig, Kind: KindIDMS, Metadata: ObjectMeta{Name: name}}
	idms.Spec.ImageDigestMirrors = nonNil(rs)
	itms := ImageTagMirrorSet{APIVersion: APIVersionConfig, Kind: KindITMS, Metadata: ObjectMeta{Name: name}}
	itms.Spec.ImageTagMirrors = nonNil(rs)
	icsp := ImageContentSourcePolicy{APIVersion: APIVersionICSP, Kind: KindICSP, Metadata: ObjectMeta{Name: name, Labels: map[string]string{operatorCatalogLabel: "true"}}}
	icsp.Spec.RepositoryDigestMirrors = nonNil(rs)
	icspGeneric := icsp
	icspGeneric.Metadata.Labels = nil
	return []struct {
		obj      any
		kind     string
		version  string
		operator bool
		field    string
	}{
		{idms, KindIDMS, APIVersionConfig, false, "imageDigestMirrors"},
		{itms, KindITMS, APIVersionConfig, false, "imageTagMirrors"},
		{icsp, KindICSP, APIVersionICSP, true, "repositoryDigestMirrors"},
		{icspGeneric, KindICSP, APIVersionICSP, false, "repositoryDigestMirrors"},
	}
}

// checkMirrorSetYAML fails when the direct serialisation of rs differs from
// sigs.k8s.io/yaml's, and reports whether the direct path was taken.
func checkMirrorSetYAML(t *testing.T, name string, rs []MirrorRule) bool {
	t.Helper()
	direct := false
	for _, o := range mirrorSetObjects(name, rs) {
		want, err := yaml.Marshal(o.obj)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendMirrorSetYAML(nil, o.version, o.kind, name, o.operator, o.field, rs)
		if !ok {
			continue
		}
		direct = true
		if !bytes.Equal(got, want) {
			t.Fatalf("%s %q, rules %q: direct YAML differs from sigs.k8s.io/yaml's\n--- direct:\n%s--- yaml.Marshal:\n%s", o.kind, name, rs, got, want)
		}
	}
	return direct
}

func TestMirrorSetYAMLMatchesYAMLMarshal(t *testing.T) {
	long := "registry.example.com/" + strings.Repeat("a-very-long-path-segment/", 20) + "leaf"
	tests := []struct {
		name   string
		obj    string
		rules  []MirrorRule
		direct bool
	}{
		{"one rule", "idms-operator-0", []MirrorRule{{Source: "quay.io/ns/repo", Mirrors: []string{"mirror.example.com:5000/airlock/ns/repo"}}}, true},
		{"several mirrors", "itms-generic-12", []MirrorRule{{Source: "quay.io/ns", Mirrors: []string{"m1.example.com/a/ns", "m2.example.com:443/b/ns"}}, {Source: "docker.io/library/busybox", Mirrors: []string{"m.example.com/x/busybox"}}}, true},
		{"long names are not folded", "idms-release-0", []MirrorRule{{Source: long, Mirrors: []string{"mirror.example.com/" + long}}}, true},
		{"upper case goes through yaml.Marshal", "idms-generic-0", []MirrorRule{{Source: "Quay.io/ns/repo", Mirrors: []string{"m.example.com/ns/repo"}}}, false},
		{"a name that reads as a number", "idms-generic-0", []MirrorRule{{Source: "1e3", Mirrors: []string{"m.example.com/ns/repo"}}}, false},
		{"a source ending in a colon", "idms-generic-0", []MirrorRule{{Source: "quay.io/ns:", Mirrors: []string{"m.example.com/ns/repo"}}}, false},
		{"no mirror", "idms-generic-0", []MirrorRule{{Source: "quay.io/ns/repo"}}, false},
		{"no rule", "idms-generic-0", nil, false},
		{"object name without a dash", "null", []MirrorRule{{Source: "quay.io/ns/repo", Mirrors: []string{"m.example.com/ns/repo"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkMirrorSetYAML(t, tt.obj, tt.rules); got != tt.direct {
				t.Errorf("direct serialisation taken: %v, want %v", got, tt.direct)
			}
		})
	}
}

// At the scale shapes (5,000 images, repository scope), every object Build
// writes is the one yaml.Marshal writes.
func TestMirrorSetYAMLScaleShapes(t *testing.T) {
	s, err := Build(scaleImages(5000), nil, Options{RepositoryScope: true})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range s.Files() {
		var obj any
		switch f.Kind {
		case KindIDMS:
			obj = s.ImageDigestMirrorSets[indexByName(t, f.ObjectName, s.ImageDigestMirrorSets, func(o ImageDigestMirrorSet) string { return o.Metadata.Name })]
		case KindITMS:
			obj = s.ImageTagMirrorSets[indexByName(t, f.ObjectName, s.ImageTagMirrorSets, func(o ImageTagMirrorSet) string { return o.Metadata.Name })]
		case KindICSP:
			obj = s.ImageContentSourcePolicies[indexByName(t, f.ObjectName, s.ImageContentSourcePolicies, func(o ImageContentSourcePolicy) string { return o.Metadata.Name })]
		default:
			continue
		}
		want, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.Data, want) {
			t.Errorf("%s: the written YAML differs from yaml.Marshal's", f.Name)
		}
		checked++
	}
	if checked < 6 {
		t.Errorf("%d mirror-set objects checked, want the split objects of every kind", checked)
	}
}

func indexByName[T any](t *testing.T, name string, objs []T, nameOf func(T) string) int {
	t.Helper()
	for i, o := range objs {
		if nameOf(o) == name {
			return i
		}
	}
	t.Fatalf("object %q not in the set", name)
	return -1
}

// The direct serialisation of a 1,000-rule object allocates once (its
// buffer), not per rule: a regression to a per-rule cost shows here.
func TestMirrorSetYAMLAllocations(t *testing.T) {
	rs := make([]MirrorRule, 1000)
	for i := range rs {
		src := "registry.example.com/ns/repo-" + strings.Repeat("x", i%20)
		rs[i] = MirrorRule{Source: src, Mirrors: []string{"mirror.example.com/airlock/" + src}}
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, ok := appendMirrorSetYAML(nil, APIVersionConfig, KindIDMS, "idms-operator-0", false, "imageDigestMirrors", rs); !ok {
			t.Fatal("direct serialisation not taken")
		}
	})
	if allocs > 1 {
		t.Errorf("%.0f allocations for 1,000 rules, want 1", allocs)
	}
}

// FuzzMirrorSetYAML compares the direct serialisation with sigs.k8s.io/yaml's
// on arbitrary names: whenever the direct path is taken, the bytes are equal.
func FuzzMirrorSetYAML(f *testing.F) {
	f.Add("idms-operator-0", "quay.io/ns/repo", "mirror.example.com:5000/airlock/ns/repo", "m2.example.com/ns")
	f.Add("itms-generic-1", "registry.example.com/a-b/c.d", "m.example.com/x", "")
	f.Add("null", "1e3/x", "0x10/y", "yes/no")
	f.Fuzz(func(t *testing.T, name, source, mirror1, mirror2 string) {
		mirrors := []string{mirror1}
		if mirror2 != "" {
			mirrors = append(mirrors, mirror2)
		}
		rs := []MirrorRule{{Source: source, Mirrors: mirrors}, {Source: "quay.io/fixed/repo", Mirrors: []string{mirror1}}}
		checkMirrorSetYAML(t, name, rs)
	})
}
