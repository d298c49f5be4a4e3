package oci

import (
	"strings"
	"testing"
)

func TestParsePlain(t *testing.T) {
	const hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		ref   string
		plain bool
	}{
		{"quay.io/ns/repo@sha256:" + hex, true},
		{"registry.example.com:5000/a/b/c:v1.2.3", true},
		{"registry.example.com/a__b/c-d---e/f.g_h:Tag_1.x-y", true},
		{"quay.io/ns/repo", true},
		{"busybox", false},
		{"localhost:5000/repo:1", false},
		{"docker.io/busybox:1", false},
		{"index.docker.io/library/busybox:1", false},
		{"Quay.io/ns/repo:1", false},
		{"quay.io/NS/repo:1", false},
		{"quay.io/ns/repo:tag@sha256:" + hex, false},
		{"quay.io/ns/repo@sha256:" + strings.ToUpper(hex), false},
		{"quay.io/ns/repo@sha512:" + hex + hex, false},
		{"quay.io/ns/re...po:1", false},
		{"quay.io/ns/re___po:1", false},
		{"quay.io/ns/-repo:1", false},
		{"quay.io/ns//repo:1", false},
		{"quay.io/ns/repo:", false},
		{"quay.io/ns/repo:-x", false},
		{"quay.io:/ns/repo:1", false},
		{"-quay.io/ns/repo:1", false},
		{"quay.io/" + strings.Repeat("a", 250) + ":1", false},
		{"quay.io/ns/repo:" + strings.Repeat("t", 129), false},
		{"[::1]:5000/ns/repo:1", false},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, ok := parsePlain(tt.ref)
			if ok != tt.plain {
				t.Fatalf("parsed the plain way: %v, want %v", ok, tt.plain)
			}
			checkPlain(t, tt.ref, got, ok)
		})
	}
}

// checkPlain fails when parsePlain took s and the general way parses it
// otherwise (or refuses it).
func checkPlain(t *testing.T, s string, got Reference, ok bool) {
	t.Helper()
	if !ok {
		return
	}
	want, err := parseNamed(s, s)
	if err != nil {
		t.Fatalf("%q parsed the plain way as %+v; the general way refuses it: %v", s, got, err)
	}
	if got != want {
		t.Fatalf("%q parsed the plain way as %+v, the general way as %+v", s, got, want)
	}
}

// The plain way allocates nothing: a regression shows here.
func TestParsePlainAllocations(t *testing.T) {
	ref := "registry.redhat.io/vendor-namespace-0001/operator-component@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if allocs := testing.AllocsPerRun(50, func() {
		if _, ok := parsePlain(ref); !ok {
			t.Fatal("not parsed the plain way")
		}
	}); allocs != 0 {
		t.Errorf("%.0f allocations, want 0", allocs)
	}
}

// FuzzParsePlain: whatever parsePlain accepts, the general way parses the same.
func FuzzParsePlain(f *testing.F) {
	f.Add("quay.io/ns/repo@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	f.Add("registry.example.com:5000/a__b/c-d---e/f.g_h:Tag_1.x-y")
	f.Add("quay.io/ns/repo")
	f.Add("a.b/c")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parsePlain(s)
		checkPlain(t, s, got, ok)
	})
}
