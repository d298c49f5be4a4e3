package signature_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/signature"
)

// catalogOf pushes n images (every fourth a two-arch index) round-robin into
// r repositories of the embedded registry (no referrers API).
func catalogOf(t *testing.T, src *registrytest.Registry, n, r int) ([]signature.Image, []imagetest.Pushed) {
	t.Helper()
	var ims []signature.Image
	var pushed []imagetest.Pushed
	for i := range n {
		repo := fmt.Sprintf("%s/apps/r%d", src.Host(), i%r)
		spec := fakeimage.Spec{Seed: uint64(100 + i), Layers: 1}
		if i%4 == 3 {
			spec.Platforms = []string{"linux/amd64", "linux/arm64"}
		}
		p := imagetest.MustPush(t, fmt.Sprintf("%s:v%d", repo, i), spec)
		ims = append(ims, signature.Image{Source: p.Ref, Repo: repo, Digest: p.Digest})
		pushed = append(pushed, p)
	}
	return ims, pushed
}

// discoverAll discovers ims 16 at a time, as Plan.AddAttachments does, with
// a source client that has read their manifests already (the plan's), and
// returns what was found by image and the requests the registry served.
func discoverAll(t *testing.T, src *registrytest.Registry, ims []signature.Image) ([][]signature.Found, int64) {
	t.Helper()
	ctx := context.Background()
	reg := registry.New(registry.Options{KeepManifests: registry.SourceManifests})
	for _, im := range ims {
		if _, err := reg.Manifest(ctx, im.Repo, im.Digest.String()); err != nil {
			t.Fatal(err)
		}
	}
	src.Reset()
	d := signature.NewDiscoverer(reg)
	found := make([][]signature.Found, len(ims))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, im := range ims {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f, err := d.Discover(ctx, im)
			if err != nil {
				t.Error(err)
			}
			found[i] = f
		})
	}
	wg.Wait()
	var n int64
	for _, c := range src.Counts().ByPath {
		n += c
	}
	return found, n
}

// Discovery that finds nothing costs one tag listing per repository (and one
// question to the host about the referrers API), not requests per image.
func TestDiscoveryRequestsUnsigned(t *testing.T) {
	src := registrytest.Start(t)
	const n, r = 40, 5
	ims, _ := catalogOf(t, src, n, r)
	found, reqs := discoverAll(t, src, ims)
	for i, f := range found {
		if len(f) != 0 {
			t.Errorf("%s: found %+v in a registry without attachments", ims[i].Source, f)
		}
	}
	if reqs > r+1 {
		t.Errorf("%d requests to discover nothing for %d images in %d repositories, want at most %d (a tag list per repository, one referrers API question)", reqs, n, r, r+1)
	}
	t.Logf("%d images in %d repositories: %d requests", n, r, reqs)
}

// With signatures in some repositories (of images, of an index's instance,
// an SBOM in the referrers fallback tag and its signature), every one is
// found and the repositories without any still cost one listing each.
func TestDiscoveryRequestsSigned(t *testing.T) {
	src := registrytest.Start(t)
	const n, r = 40, 5
	ims, pushed := catalogOf(t, src, n, r)
	k := signtest.NewKey(t)
	reg := registry.New(registry.Options{})
	want := map[int][]digest.Digest{}
	for i := range ims {
		if i%r != 0 && i%r != 1 { // repositories r0 and r1 hold attachments
			continue
		}
		switch {
		case i%4 == 3: // an index: its second instance is signed
			want[i] = append(want[i], signtest.Sign(t, k, ims[i].Repo, pushed[i].Manifests[2]))
		case i%3 == 0: // signed, with a signed SBOM
			want[i] = append(want[i], signtest.Sign(t, k, ims[i].Repo, ims[i].Digest))
			m, err := reg.Manifest(context.Background(), ims[i].Repo, ims[i].Digest.String())
			if err != nil {
				t.Fatal(err)
			}
			sbom := signtest.PushSBOM(t, ims[i].Repo, v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json",
				Digest: v1.Hash{Algorithm: "sha256", Hex: ims[i].Digest.Encoded()}, Size: int64(len(m.Raw))}, []byte(`{"spdxVersion":"SPDX-2.3"}`))
			want[i] = append(want[i], sbom, signtest.Sign(t, k, ims[i].Repo, sbom))
		case i%3 == 1:
			want[i] = append(want[i], signtest.Sign(t, k, ims[i].Repo, ims[i].Digest))
		}
	}
	found, reqs := discoverAll(t, src, ims)
	for i := range ims {
		var got []digest.Digest
		for _, f := range found[i] {
			got = append(got, f.Digest)
		}
		sort.Slice(got, func(a, b int) bool { return got[a] < got[b] })
		w := append([]digest.Digest(nil), want[i]...)
		sort.Slice(w, func(a, b int) bool { return w[a] < w[b] })
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: found %v, want %v", ims[i].Source, got, w)
		}
	}
	// The unsigned repositories' images cost nothing past their listing;
	// those of r0 and r1 (16 images) fetch what they have.
	if max := int64(r + 1 + 2*n/r*4); reqs > max {
		t.Errorf("%d requests, want at most %d", reqs, max)
	}
	t.Logf("%d images in %d repositories, 2 with attachments: %d requests", n, r, reqs)
}
