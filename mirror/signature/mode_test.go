package signature_test

import (
	"context"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/signature"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want signature.Mode
		err  bool
	}{
		{"", signature.BestEffort, false},
		{"best-effort", signature.BestEffort, false},
		{"required", signature.Required, false},
		{"off", signature.Off, false},
		{"strict", "", true},
	} {
		got, err := signature.ParseMode(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseMode(%q) = %q, %v", tc.in, got, err)
		}
	}
}

// An image an earlier mirror tagged "sha256-<hex>" (its own digest) has no
// referrers index under that tag: discovery must not take the image for one.
func TestDigestTagIsNotAReferrersIndex(t *testing.T) {
	src := registrytest.Start(t)
	p := imagetest.MustPush(t, src.Host()+"/apps/index:1.0", fakeimage.Spec{Seed: 5, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}})
	imagetest.MustPush(t, src.Host()+"/apps/index:"+oci.DigestTag(p.Digest), fakeimage.Spec{Seed: 5, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}})
	d := signature.NewDiscoverer(registry.New(registry.Options{}))
	found, err := d.Discover(context.Background(), signature.Image{Source: "x", Repo: src.Host() + "/apps/index", Digest: p.Digest})
	if err != nil || len(found) != 0 {
		t.Fatalf("found %+v, %v; want nothing", found, err)
	}
}
