package signature_test

import (
	"context"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
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

// incompleteTags is a registry whose tag listing is too long to read: the
// discoverer asks for each attachment tag instead.
type incompleteTags struct{ *registry.Client }

func (incompleteTags) TagsUpTo(context.Context, string, int) ([]string, bool, error) {
	return []string{"unrelated"}, false, nil
}

func TestDiscoverWithoutTagListing(t *testing.T) {
	src := registrytest.Start(t)
	repo := src.Host() + "/apps/many-tags"
	p := imagetest.MustPush(t, repo+":1.0", fakeimage.Spec{Seed: 9, Layers: 1})
	sig := signtest.Sign(t, signtest.NewKey(t), repo, p.Digest)
	for _, s := range []endpoint.Source{incompleteTags{registry.New(registry.Options{})}, registry.New(registry.Options{})} {
		d := signature.NewDiscoverer(s)
		found, err := d.Discover(context.Background(), signature.Image{Source: "x", Repo: repo, Digest: p.Digest})
		if err != nil || len(found) != 1 || found[0].Digest != sig || found[0].Tag != oci.AttachmentTag(p.Digest, oci.AttachmentSignature) {
			t.Errorf("%T: found %+v, %v; want the signature %s", s, found, err, sig)
		}
	}
}
