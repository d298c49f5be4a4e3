package manifests

import (
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/location"
)

// plainAgrees checks that parseRef, which reads plain references through
// oci.ParseReference, says what distribution/reference alone (parseNamed)
// says of s: the same parts, or an error.
func plainAgrees(t *testing.T, s string) {
	t.Helper()
	got, gerr := parseRef(s)
	in := location.ImageRef(strings.TrimSpace(s))
	if gerr == errNotRegistry || in == "" {
		return
	}
	want, werr := parseNamed(in)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: parseRef error %v, distribution/reference's %v", s, gerr, werr)
	}
	if gerr == nil && got != want {
		t.Fatalf("%q: parseRef %+v, distribution/reference %+v", s, got, want)
	}
}

func TestParseRefPlainAgrees(t *testing.T) {
	d := "sha256:4c3b1bfa55ebb0ba7d1e2a3e9e0dc0b3d6a3b0f1f4e6c1c2b9c3d2e1f0a9b8c7"
	for _, s := range []string{
		"quay.io/ns/app@" + d, "127.0.0.1:5000/a/b/c@" + d, "reg.example:5000/a/b:v1.2", "quay.io/ns/app",
		"docker.io/library/busybox:1", "busybox", "ns/app:v1", "localhost:5000/x@" + d, "Quay.io/ns/app:1",
		"quay.io/ns/App:1", "quay.io/ns/app:v1@" + d, "quay.io/ns/app@sha256:abc", "docker://quay.io/ns/app:1",
		"user:pw@quay.io/ns/app:1", "quay.io//app:1", "quay.io/ns/app:", " quay.io/ns/app:1 ",
	} {
		t.Run(s, func(t *testing.T) { plainAgrees(t, s) })
	}
}

// FuzzParseRefPlain: for any reference, parseRef and distribution/reference
// agree.
func FuzzParseRefPlain(f *testing.F) {
	f.Add("quay.io/ns/app@sha256:4c3b1bfa55ebb0ba7d1e2a3e9e0dc0b3d6a3b0f1f4e6c1c2b9c3d2e1f0a9b8c7")
	f.Add("reg.example:5000/a/b:v1.2")
	f.Add("busybox")
	f.Fuzz(func(t *testing.T, s string) { plainAgrees(t, s) })
}
