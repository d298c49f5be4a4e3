package oci

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// TestPlatformsKeep cuts a buildx-style index (four platforms, an arm variant,
// attestations, a nested index) down to subsets; the kept children are in
// testdata/platforms.golden.
func TestPlatformsKeep(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "platforms-index.json"))
	if err != nil {
		t.Fatal(err)
	}
	refs, err := Parse(Manifest{Digest: digest.FromBytes(raw), Raw: raw})
	if err != nil {
		t.Fatal(err)
	}
	label := func(c ChildManifest) string {
		switch {
		case c.Annotations[annotationReferenceType] != "":
			for _, o := range refs.Manifests {
				if o.Digest.String() == c.Annotations[annotationReferenceDigest] {
					return "attestation of " + o.Platform
				}
			}
			return "attestation of ?"
		case c.Platform == "":
			return "(no platform) " + c.MediaType
		}
		return c.Platform
	}
	subsets := []Platforms{
		nil,
		{"linux/amd64"},
		{"linux/arm64"},
		{"linux/amd64", "linux/arm64"},
		{"windows/amd64"},
		{"linux/s390x"},
		{"linux/arm64/v8"},
	}
	var out strings.Builder
	for _, ps := range subsets {
		fmt.Fprintf(&out, "subset %v (all: %v):\n", []string(ps), ps.All())
		for _, c := range ps.Keep(refs.Manifests) {
			fmt.Fprintf(&out, "  %s\n", label(c))
		}
	}
	golden.Check(t, filepath.Join("testdata", "platforms.golden"), []byte(out.String()))
}

func TestPlatformsWantsAndUnion(t *testing.T) {
	tests := []struct {
		ps       Platforms
		platform string
		want     bool
	}{
		{nil, "linux/s390x", true},
		{Platforms{"linux/amd64"}, "linux/amd64", true},
		{Platforms{"linux/amd64"}, "windows/amd64", false},
		{Platforms{"linux/arm64"}, "linux/arm64/v8", true},
		{Platforms{"linux/arm"}, "linux/arm64", false},
		{Platforms{"linux/amd64"}, "", false},
		{Platforms{"linux/amd64"}, "unknown/unknown", false},
	}
	for _, tc := range tests {
		if got := tc.ps.Wants(tc.platform); got != tc.want {
			t.Errorf("%v.Wants(%q) = %v, want %v", tc.ps, tc.platform, got, tc.want)
		}
	}
	unions := []struct {
		a, b, want Platforms
	}{
		{nil, Platforms{"linux/amd64"}, nil},
		{Platforms{"linux/amd64"}, nil, nil},
		{Platforms{"linux/amd64"}, Platforms{"linux/arm64", "linux/amd64"}, Platforms{"linux/amd64", "linux/arm64"}},
	}
	for _, tc := range unions {
		if got := tc.a.Union(tc.b); fmt.Sprint(got) != fmt.Sprint(tc.want) || got.All() != tc.want.All() {
			t.Errorf("%v.Union(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
