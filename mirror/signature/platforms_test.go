package signature_test

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/signature"
)

// The attachments of an index's children are looked for only on the children
// of the image's platform subset.
func TestDiscoverPlatformSubset(t *testing.T) {
	s := seed(t, registrytest.StartKind(t, registrytest.DistributionV3).Host)
	// Which platform the signed child is, read with go-containerregistry.
	ref, err := name.ParseReference(s.multiRepo+"@"+s.index.Digest.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	signed, other := "", ""
	for _, c := range mf.Manifests {
		p := c.Platform.OS + "/" + c.Platform.Architecture
		if c.Digest.String() == s.index.Manifests[1].String() {
			signed = p
		} else {
			other = p
		}
	}
	tests := []struct {
		name      string
		platforms []string
		want      int
	}{
		{"every platform", nil, 1},
		{"the signed child's platform", []string{signed}, 1},
		{"the other platform", []string{other}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := signature.NewDiscoverer(registry.New(registry.Options{}))
			found, err := d.Discover(context.Background(), signature.Image{Source: "multi", Repo: s.multiRepo, Digest: s.index.Digest, Platforms: tc.platforms})
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != tc.want || (tc.want == 1 && found[0].Digest != s.childSig) {
				t.Fatalf("platforms %v: found %+v, want %d (the child's signature %s)", tc.platforms, found, tc.want, s.childSig)
			}
		})
	}
}
