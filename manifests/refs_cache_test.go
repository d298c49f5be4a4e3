package manifests

import (
	"fmt"
	"testing"
)

// refCacheAgrees checks that refCache.parse gives what parseRef gives for s,
// the first time and from the cache, after a sibling reference of the same
// name filled it.
func refCacheAgrees(t *testing.T, s string) {
	t.Helper()
	want, werr := parseRef(s)
	c := refCache{}
	for i := 0; i < 2; i++ {
		got, err := c.parse(s)
		if fmt.Sprint(got) != fmt.Sprint(want) || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("parse %q (pass %d) = %v, %v; parseRef = %v, %v", s, i, got, err, want, werr)
		}
	}
}

// Parsing a reference by digest through the cache gives what parsing it
// whole gives, errors included.
func TestRefCacheAgreesWithParseRef(t *testing.T) {
	const d = "sha256:4c3b1bfa55ebb0ba7d1e2a3e9e0dc0b3d6a3b0f1f4e6c1c2b9c3d2e1f0a9b8c7"
	for _, s := range []string{
		"quay.io/ns/app@" + d,
		"docker://quay.io/ns/app@" + d,
		"  quay.io/ns/app@" + d + " ",
		"quay.io/ns/app:v1@" + d,
		"busybox@" + d,
		"127.0.0.1:5000/mirror/scale/vendor-01/app-0001@" + d,
		"quay.io/ns/app@sha256:short",
		"quay.io/ns/app@SHA256:" + d[7:],
		"quay.io/NS/app@" + d,
		"oci:/tmp/layout@" + d,
		"quay.io/ns/app:v1",
		"@" + d,
		"quay.io/ns/app@" + d + "@" + d,
		"",
	} {
		t.Run(s, func(t *testing.T) { refCacheAgrees(t, s) })
	}
}

// FuzzRefCache: for any reference, the cache and parseRef agree.
func FuzzRefCache(f *testing.F) {
	f.Add("quay.io/ns/app@sha256:4c3b1bfa55ebb0ba7d1e2a3e9e0dc0b3d6a3b0f1f4e6c1c2b9c3d2e1f0a9b8c7")
	f.Add("docker://reg:5000/a/b:tag@sha256:4c3b1bfa55ebb0ba7d1e2a3e9e0dc0b3d6a3b0f1f4e6c1c2b9c3d2e1f0a9b8c7")
	f.Add("oci:x@y")
	f.Fuzz(func(t *testing.T, s string) { refCacheAgrees(t, s) })
}
