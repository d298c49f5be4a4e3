package manifests

import "testing"

// CatalogSource names are short and stable: a tag as it is, a digest or a
// digest tag (sha256-<hex>, a digest-only or untagged oci:// catalog) by its
// first 12 hex characters.
func TestCatalogBaseName(t *testing.T) {
	const hex = "b85d90a1c2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7"
	for _, tc := range []struct{ ref, want string }{
		{"mirror.example.com/ns/oci-cat:v1", "oci-cat-v1"},
		{"mirror.example.com/ns/oci-cat:sha256-" + hex, "oci-cat-b85d90a1c2e3"},
		{"mirror.example.com/ns/oci-cat@sha256:" + hex, "oci-cat-b85d90a1c2e3"},
	} {
		dst, err := parseRef(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := catalogBaseName(dst, ""); got != tc.want {
			t.Errorf("catalogBaseName(%s) = %q, want %q", tc.ref, got, tc.want)
		}
	}
}
