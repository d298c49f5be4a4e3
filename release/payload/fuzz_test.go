package payload

import (
	"os"
	"testing"
)

// The parsers take any bytes without panicking; what they accept is usable.
func FuzzParseImageReferences(f *testing.F) {
	for _, n := range []string{"testdata/image-references.template", "testdata/image-references-by-tag"} {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b)
			f.Add([]byte(refs.Replace(string(b))))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseImageReferences(b)
		if err != nil {
			return
		}
		if len(r.Components) == 0 {
			t.Fatal("accepted without components")
		}
		for _, c := range r.Components {
			if !componentName.MatchString(c.Name) || c.Digest.Validate() != nil {
				t.Fatalf("accepted %+v", c)
			}
		}
	})
}

func FuzzParseMetadata(f *testing.F) {
	if b, err := os.ReadFile("testdata/release-metadata"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := ParseMetadata(b)
		if err == nil && md.Version == "" {
			t.Fatal("accepted without a version")
		}
	})
}

func FuzzKubeVirtImage(f *testing.F) {
	if b, err := os.ReadFile("testdata/0000_50_installer_coreos-bootimages.yaml"); err == nil {
		f.Add(b, "amd64")
		f.Add(b, "s390x")
	}
	f.Fuzz(func(t *testing.T, b []byte, arch string) {
		if ref, err := KubeVirtImage(b, arch); err == nil {
			if _, err := byDigest(ref); err != nil {
				t.Fatalf("accepted %q: %v", ref, err)
			}
		}
	})
}
