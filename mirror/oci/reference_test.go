package oci

import (
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

const testHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseReference(t *testing.T) {
	dg := digest.Digest("sha256:" + testHex)
	tests := []struct {
		in        string
		want      Reference
		str       string
		ident     string
		destTag   string
		wantError string
	}{
		{in: "busybox", want: Reference{Registry: "docker.io", Path: "library/busybox", Tag: "latest", DefaultedTag: true},
			str: "docker.io/library/busybox:latest", ident: "latest", destTag: "latest"},
		{in: "docker://busybox:1.36", want: Reference{Registry: "docker.io", Path: "library/busybox", Tag: "1.36"},
			str: "docker.io/library/busybox:1.36", ident: "1.36", destTag: "1.36"},
		{in: "someone/tool:v1", want: Reference{Registry: "docker.io", Path: "someone/tool", Tag: "v1"},
			str: "docker.io/someone/tool:v1", ident: "v1", destTag: "v1"},
		{in: "quay.io/ns/name@" + dg.String(), want: Reference{Registry: "quay.io", Path: "ns/name", Digest: dg},
			str: "quay.io/ns/name@" + dg.String(), ident: dg.String(), destTag: "sha256-" + testHex},
		{in: "registry.redhat.io/redhat/redhat-operator-index:v4.18@" + dg.String(),
			want: Reference{Registry: "registry.redhat.io", Path: "redhat/redhat-operator-index", Tag: "v4.18", Digest: dg},
			str:  "registry.redhat.io/redhat/redhat-operator-index:v4.18@" + dg.String(), ident: dg.String(), destTag: "v4.18"},
		{in: "localhost:5000/a/b/c:t", want: Reference{Registry: "localhost:5000", Path: "a/b/c", Tag: "t"},
			str: "localhost:5000/a/b/c:t", ident: "t", destTag: "t"},
		{in: "", wantError: "empty reference"},
		{in: "Quay.io/NS/Name:v1", wantError: "must be lowercase"},
		{in: "quay.io/ns/name@sha256:abc", wantError: "invalid"},
		{in: "quay.io/ns/name:bad tag", wantError: "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseReference(tc.in)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) || !errors.Is(err, ErrInvalidReference) {
					t.Fatalf("ParseReference(%q) error = %v, want one containing %q wrapping ErrInvalidReference", tc.in, err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseReference(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseReference(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if got.String() != tc.str {
				t.Errorf("String() = %q, want %q", got.String(), tc.str)
			}
			if got.Identifier() != tc.ident {
				t.Errorf("Identifier() = %q, want %q", got.Identifier(), tc.ident)
			}
			if got.DestinationTag() != tc.destTag {
				t.Errorf("DestinationTag() = %q, want %q", got.DestinationTag(), tc.destTag)
			}
		})
	}
}
