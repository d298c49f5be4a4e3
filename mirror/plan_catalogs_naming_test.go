package mirror

import (
	"testing"

	"github.com/opencontainers/go-digest"
)

// An oci:// catalog keeps the tag it names as a tag at the destination.
func TestCatalogRefForNaming(t *testing.T) {
	d := digest.Digest("sha256:b85d90a1c2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7")
	for _, tc := range []struct {
		catalog string
		d       digest.Digest
		want    string
	}{
		{"oci:///srv/catalogs/oci-cat:v1", d, "localhost/oci-cat:v1@" + d.String()},
		{"oci:///srv/catalogs/oci-cat:v1", "", "localhost/oci-cat:v1"},
		{"oci:///srv/catalogs/oci-cat", d, "localhost/oci-cat@" + d.String()},
		{"oci:///srv/catalogs/oci-cat/", "", "localhost/oci-cat:latest"},
		{"oci://relative/My Catalog", "", "localhost/my-catalog:latest"},
		{"quay.io/ns/index:v4.17", d, "quay.io/ns/index:v4.17"},
	} {
		if got := catalogRefForNaming(tc.catalog, tc.d); got != tc.want {
			t.Errorf("catalogRefForNaming(%q) = %q, want %q", tc.catalog, got, tc.want)
		}
	}
	dst, err := CatalogDestination(catalogRefForNaming("oci:///srv/catalogs/oci-cat:v1", d), "mirror.example.com/ns", "", "", 0, "")
	if err != nil || dst.String() != "mirror.example.com/ns/oci-cat:v1" {
		t.Errorf("destination %s, %v; want mirror.example.com/ns/oci-cat:v1", dst, err)
	}
}
