package mirror

import (
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

const testHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDestinationRepo(t *testing.T) {
	tests := []struct {
		src, ns   string
		max       int
		want      string
		wantError string
	}{
		{src: "quay.io/a/b/c:v1", ns: "reg:5000/mirror", want: "reg:5000/mirror/a/b/c"},
		{src: "quay.io/a/b/c:v1", ns: "docker://reg:5000/mirror/", want: "reg:5000/mirror/a/b/c"},
		{src: "quay.io/a/b/c:v1", ns: "reg:5000", want: "reg:5000/a/b/c"},
		{src: "busybox", ns: "reg.example.com/x", want: "reg.example.com/x/library/busybox"},
		// Destination path "mirror/a/b/c" has 4 components.
		{src: "quay.io/a/b/c:v1", ns: "reg/mirror", max: 4, want: "reg/mirror/a/b/c"},
		{src: "quay.io/a/b/c:v1", ns: "reg/mirror", max: 5, want: "reg/mirror/a/b/c"},
		{src: "quay.io/a/b/c:v1", ns: "reg/mirror", max: 3, want: "reg/mirror/a/b-c"},
		{src: "quay.io/a/b/c:v1", ns: "reg/mirror", max: 2, want: "reg/mirror/a-b-c"},
		{src: "quay.io/a/b/c:v1", ns: "reg/mirror", max: 1, want: "reg/mirror-a-b-c"},
		{src: "quay.io/a/b/c:v1", ns: "reg/m1/m2", max: 2, want: "reg/m1/m2-a-b-c"},
		{src: "registry.redhat.io/redhat/redhat-operator-index:v4.18", ns: "quay.example.com:8443/org", max: 2,
			want: "quay.example.com:8443/org/redhat-redhat-operator-index"},
		{src: "quay.io/a/b:v1", ns: "reg", max: -1, wantError: "max-nested-paths"},
		{src: "quay.io/a/b:v1", ns: "", wantError: "no registry host"},
		{src: "quay.io/a/b:v1", ns: "reg/ns:tag", wantError: "must not have a tag"},
		{src: "quay.io/a/b:v1", ns: "re g/ns", wantError: "not a valid host"},
		{src: "quay.io/a/b:v1", ns: "reg/NS", wantError: "not valid"},
		{src: "::", ns: "reg", wantError: "invalid image reference"},
	}
	for _, tc := range tests {
		t.Run(tc.src+"→"+tc.ns, func(t *testing.T) {
			got, err := DestinationRepo(tc.src, tc.ns, tc.max)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("DestinationRepo(%q, %q, %d) error = %v, want one containing %q", tc.src, tc.ns, tc.max, err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("DestinationRepo(%q, %q, %d): %v", tc.src, tc.ns, tc.max, err)
			}
			if got != tc.want {
				t.Fatalf("DestinationRepo(%q, %q, %d) = %q, want %q", tc.src, tc.ns, tc.max, got, tc.want)
			}
		})
	}
}

func TestImageDestination(t *testing.T) {
	dg := "sha256:" + testHex
	tests := []struct{ src, want string }{
		{"quay.io/ns/img:v1", "reg/m/ns/img:v1"},
		{"quay.io/ns/img@" + dg, "reg/m/ns/img:sha256-" + testHex},
		{"quay.io/ns/img:v1@" + dg, "reg/m/ns/img:v1"},
		{"quay.io/ns/img", "reg/m/ns/img:latest"},
	}
	for _, tc := range tests {
		got, err := ImageDestination(tc.src, "reg/m", 0)
		if err != nil {
			t.Fatalf("ImageDestination(%q): %v", tc.src, err)
		}
		if got.String() != tc.want {
			t.Errorf("ImageDestination(%q) = %q, want %q", tc.src, got.String(), tc.want)
		}
	}
}

func TestCatalogDestination(t *testing.T) {
	dg := "sha256:" + testHex
	rebuilt := digest.Digest("sha256:" + strings.Repeat("f", 64))
	tests := []struct {
		name, src, targetCatalog, targetTag string
		max                                 int
		rebuilt                             digest.Digest
		want, wantError                     string
	}{
		{name: "tag kept", src: "registry.redhat.io/redhat/redhat-operator-index:v4.18", want: "reg/m/redhat/redhat-operator-index:v4.18"},
		{name: "tag+digest keeps tag", src: "registry.redhat.io/redhat/redhat-operator-index:v4.18@" + dg, want: "reg/m/redhat/redhat-operator-index:v4.18"},
		{name: "targetTag", src: "quay.io/ns/cat:v1", targetTag: "mine", want: "reg/m/ns/cat:mine"},
		{name: "targetCatalog", src: "quay.io/ns/cat:v1", targetCatalog: "other/path/cat", want: "reg/m/other/path/cat:v1"},
		{name: "targetCatalog flattened", src: "quay.io/ns/cat:v1", targetCatalog: "/other/path/cat/", max: 2, want: "reg/m/other-path-cat:v1"},
		{name: "both", src: "quay.io/ns/cat@" + dg, targetCatalog: "x/y", targetTag: "t1", want: "reg/m/x/y:t1"},
		{name: "digest only, not rebuilt", src: "quay.io/ns/cat@" + dg, want: "reg/m/ns/cat:sha256-" + testHex},
		{name: "digest only, rebuilt", src: "quay.io/ns/cat@" + dg, rebuilt: rebuilt, want: "reg/m/ns/cat:sha256-" + strings.Repeat("f", 64)},
		{name: "targetCatalog with tag", src: "quay.io/ns/cat:v1", targetCatalog: "x/y:v2", wantError: "without tag or digest"},
		{name: "targetCatalog upper-case", src: "quay.io/ns/cat:v1", targetCatalog: "X/y", wantError: "not a valid repository path"},
		{name: "bad targetTag", src: "quay.io/ns/cat:v1", targetTag: "-bad", wantError: "not a valid tag"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CatalogDestination(tc.src, "reg/m", tc.targetCatalog, tc.targetTag, tc.max, tc.rebuilt)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Fatalf("CatalogDestination = %q, want %q", got.String(), tc.want)
			}
		})
	}
}

func FuzzParseReference(f *testing.F) {
	for _, s := range []string{"busybox", "quay.io/a/b:v1", "quay.io/a/b@sha256:" + testHex, "localhost:5000/x:y@sha256:" + testHex, "docker://x", "::", "a/B"} {
		f.Add(s, "reg:5000/ns", 2)
	}
	f.Fuzz(func(t *testing.T, s, ns string, max int) {
		r, err := oci.ParseReference(s)
		if err != nil {
			return
		}
		if r.Tag == "" && r.Digest == "" {
			t.Fatalf("oci.ParseReference(%q) gave neither tag nor digest", s)
		}
		// A parsed reference round-trips through its String form.
		r2, err := oci.ParseReference(r.String())
		if err != nil {
			t.Fatalf("oci.ParseReference(%q).String() = %q does not parse: %v", s, r.String(), err)
		}
		if r2.Repository() != r.Repository() || r2.Tag != r.Tag || r2.Digest != r.Digest {
			t.Fatalf("round trip of %q: %+v != %+v", s, r2, r)
		}
		if max < 0 || max > 64 {
			return
		}
		repo, err := DestinationRepo(s, ns, max)
		if err != nil {
			return
		}
		if max > 0 {
			host, _, _ := strings.Cut(repo, "/")
			if n := strings.Count(strings.TrimPrefix(repo, host+"/"), "/") + 1; n > max {
				t.Fatalf("DestinationRepo(%q, %q, %d) = %q has %d path components", s, ns, max, repo, n)
			}
		}
	})
}
