// Package imagetest builds small deterministic random images and multi-arch
// indexes (Docker v2 schema 2 or OCI media types) and pushes them to a registry.
package imagetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
)

// Spec describes an image (or, with Platforms, an index of images).
type Spec struct {
	// Seed makes the unique layers (and so the image) deterministic.
	Seed uint64
	// BaseSeed and BaseLayers: images with the same BaseSeed share their first
	// BaseLayers layers.
	BaseSeed   uint64
	BaseLayers int
	// Layers is the number of layers unique to this image (per platform).
	Layers int
	// LayerSize is the size in bytes of each layer (default 1024).
	LayerSize int
	// OCI selects OCI media types; the default is Docker v2 schema 2.
	OCI bool
	// Platforms, e.g. {"linux/amd64", "linux/arm64"}, builds an index (manifest
	// list) with one image per platform; they share the base layers.
	Platforms []string
}

// Pushed describes what Push wrote.
type Pushed struct {
	Ref       string        // host/repo:tag
	Digest    digest.Digest // top-level manifest digest
	MediaType string
	// Manifests are the digests of every manifest (the top one and its children).
	Manifests []digest.Digest
	// Blobs are the unique config and layer digests, sorted, with their total size.
	Blobs     []digest.Digest
	BlobBytes int64
}

func layerBytes(seed uint64, idx, size int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(idx)+1))
	b := make([]byte, size)
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Image builds one image for platform ("" for none) from spec.
func Image(spec Spec, platform string) (v1.Image, error) {
	size := spec.LayerSize
	if size <= 0 {
		size = 1024
	}
	lmt, mt, cmt := types.DockerLayer, types.DockerManifestSchema2, types.DockerConfigJSON
	if spec.OCI {
		lmt, mt, cmt = types.OCILayer, types.OCIManifestSchema1, types.OCIConfigJSON
	}
	var layers []v1.Layer
	for i := 0; i < spec.BaseLayers; i++ {
		layers = append(layers, static.NewLayer(layerBytes(spec.BaseSeed^0xba5e, i, size), lmt))
	}
	pseed := spec.Seed
	for _, c := range platform {
		pseed = pseed*31 + uint64(c)
	}
	for i := 0; i < spec.Layers; i++ {
		layers = append(layers, static.NewLayer(layerBytes(pseed, 1000+i, size), lmt))
	}
	img := mutate.MediaType(empty.Image, mt)
	img = mutate.ConfigMediaType(img, cmt)
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Labels = map[string]string{"airlock.test/seed": fmt.Sprint(spec.Seed)}
	if platform != "" {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, err
		}
		cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	}
	return mutate.ConfigFile(img, cf)
}

// Index builds a multi-arch index from spec (spec.Platforms must not be empty).
func Index(spec Spec) (v1.ImageIndex, error) {
	if len(spec.Platforms) == 0 {
		return nil, fmt.Errorf("imagetest: index needs platforms")
	}
	imt := types.DockerManifestList
	if spec.OCI {
		imt = types.OCIImageIndex
	}
	idx := mutate.IndexMediaType(empty.Index, imt)
	for _, pl := range spec.Platforms {
		img, err := Image(spec, pl)
		if err != nil {
			return nil, err
		}
		p, err := v1.ParsePlatform(pl)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return idx, nil
}

// Push builds spec and pushes it to ref ("host/repo:tag"). Extra remote options
// (for example remote.WithAuth) are passed through.
func Push(ctx context.Context, ref string, spec Spec, opts ...remote.Option) (Pushed, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return Pushed{}, fmt.Errorf("imagetest: %w", err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	out := Pushed{Ref: ref}
	blobs := map[digest.Digest]int64{}
	addImage := func(img v1.Image) error {
		d, err := img.Digest()
		if err != nil {
			return err
		}
		out.Manifests = append(out.Manifests, digest.Digest(d.String()))
		m, err := img.Manifest()
		if err != nil {
			return err
		}
		blobs[digest.Digest(m.Config.Digest.String())] = m.Config.Size
		for _, l := range m.Layers {
			blobs[digest.Digest(l.Digest.String())] = l.Size
		}
		return nil
	}
	if len(spec.Platforms) == 0 {
		img, err := Image(spec, "")
		if err != nil {
			return Pushed{}, err
		}
		if err := remote.Write(r, img, opts...); err != nil {
			return Pushed{}, fmt.Errorf("imagetest: push %s: %w", ref, err)
		}
		if err := addImage(img); err != nil {
			return Pushed{}, err
		}
		mt, _ := img.MediaType()
		out.MediaType = string(mt)
		out.Digest = out.Manifests[0]
	} else {
		idx, err := Index(spec)
		if err != nil {
			return Pushed{}, err
		}
		if err := remote.WriteIndex(r, idx, opts...); err != nil {
			return Pushed{}, fmt.Errorf("imagetest: push %s: %w", ref, err)
		}
		d, _ := idx.Digest()
		mt, _ := idx.MediaType()
		out.Digest, out.MediaType = digest.Digest(d.String()), string(mt)
		out.Manifests = append(out.Manifests, out.Digest)
		im, err := idx.IndexManifest()
		if err != nil {
			return Pushed{}, err
		}
		for _, desc := range im.Manifests {
			img, err := idx.Image(desc.Digest)
			if err != nil {
				return Pushed{}, err
			}
			if err := addImage(img); err != nil {
				return Pushed{}, err
			}
		}
	}
	for d, s := range blobs {
		out.Blobs = append(out.Blobs, d)
		out.BlobBytes += s
	}
	sort.Slice(out.Blobs, func(i, j int) bool { return out.Blobs[i] < out.Blobs[j] })
	return out, nil
}

// TB is the part of testing.TB MustPush uses. The package does not import
// testing, so that the airlock binary (which seeds its demo registry with these
// images) never links it.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// MustPush is Push for tests: it fails t on error.
func MustPush(t TB, ref string, spec Spec, opts ...remote.Option) Pushed {
	t.Helper()
	p, err := Push(context.Background(), ref, spec, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Repo returns the repository part of a "host/repo:tag" reference.
func Repo(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}
