package oci

import "testing"

func TestAPIPathKind(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/v2/", "base"},
		{"/v2", "base"},
		{"/v2/_catalog", "catalog"},
		{"/v2/ns/app/tags/list", "tags"},
		{"/v2/ns/app/blobs/uploads/", "upload"},
		{"/v2/ns/app/blobs/uploads/3f2a?_state=x", "upload"},
		{"/v2/ns/app/blobs/sha256:abc", "blob"},
		{"/v2/ns/app/manifests/v1", "manifest"},
		{"/v2/ns/app/referrers/sha256:abc", "other"},
		{"/token", "other"},
	} {
		if got := APIPathKind(c.path); got != c.want {
			t.Errorf("APIPathKind(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}
