package validate

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/distribution/reference"
)

// plainReferenceCases are references on both sides of plainReference's
// shape; each must be accepted by the library whenever plainReference
// accepts it.
var plainReferenceCases = []struct {
	ref   string
	plain bool
}{
	{"quay.io/org/operator@sha256:72bae52af040b088349d03af930c7fe379df2bbc434c68a3666aa33bee839467", true},
	{"quay.io/org/operator:v1.2.3", true},
	{"registry.example.com:5000/a/b-c/d__e/f.g:latest", true},
	{"registry.example.com/a/b:Tag_1.x-y@sha256:72bae52af040b088349d03af930c7fe379df2bbc434c68a3666aa33bee839467", true},
	{"quay.io/a---b/c", true},
	{"docker.io/library/busybox", false},
	{"index.docker.io/busybox", false},
	{"busybox", false},
	{"localhost/x", false},
	{"Quay.io/org/op", false},
	{"quay.io/Org/op", false},
	{"quay.io/org/op:", false},
	{"quay.io/org/op:-x", false},
	{"quay.io/org/op:.x", false},
	{"quay.io/org/op@sha256:72BAE52af040b088349d03af930c7fe379df2bbc434c68a3666aa33bee839467", false},
	{"quay.io/org/op@sha256:72bae5", false},
	{"quay.io/org/op@sha512:72bae52af040b088349d03af930c7fe379df2bbc434c68a3666aa33bee839467", false},
	{"quay.io/org//op", false},
	{"quay.io/org/op/", false},
	{"quay.io/org/op.", false},
	{"quay.io/org/.op", false},
	{"quay.io/org/op___x", false},
	{"-quay.io/org/op", false},
	{"quay-.io/org/op", false},
	{"quay.io:/org/op", false},
	{"quay.io", false},
	{"quay.io/org/op:" + strings.Repeat("t", 129), false},
	{"quay.io/org/op:" + strings.Repeat("t", 128), true},
	{"", false},
	{"quay.io/org/op name", false},
}

func TestPlainReference(t *testing.T) {
	for _, c := range plainReferenceCases {
		got := plainReference(c.ref)
		if got != c.plain {
			t.Errorf("plainReference(%q) = %v, want %v", c.ref, got, c.plain)
		}
		if got {
			if _, err := reference.ParseNormalizedNamed(c.ref); err != nil {
				t.Errorf("plainReference(%q) but the library says %v", c.ref, err)
			}
		}
	}
}

// TestPlainReferenceRealCatalogs checks every image reference of the real
// catalogs: plainReference never accepts one the library refuses, and it
// takes the usual ones.
func TestPlainReferenceRealCatalogs(t *testing.T) {
	if testing.Short() {
		t.Skip("real catalogs skipped in -short mode")
	}
	for _, rel := range realCatalogRoots(t) {
		c, err := fbc.LoadDir(context.Background(), rel, fbc.LoadOptions{ElideHeavy: true})
		if err != nil {
			t.Fatal(err)
		}
		total, plain := 0, 0
		check := func(ref string) {
			total++
			if plainReference(ref) {
				plain++
				if _, err := reference.ParseNormalizedNamed(ref); err != nil {
					t.Errorf("%s: plainReference(%q) but the library says %v", rel, ref, err)
				}
			}
		}
		for _, p := range c.Packages {
			for _, b := range p.Bundles {
				check(b.Image)
				for _, ri := range b.RelatedImages {
					check(ri.Image)
				}
			}
		}
		if total > 100 && plain < total*9/10 {
			t.Errorf("%s: only %d of %d references took the fast path", rel, plain, total)
		}
	}
}

func FuzzPlainReference(f *testing.F) {
	for _, c := range plainReferenceCases {
		f.Add(c.ref)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		if plainReference(ref) {
			if _, err := reference.ParseNormalizedNamed(ref); err != nil {
				t.Fatalf("plainReference(%q) but the library says %v", ref, err)
			}
		}
	})
}
