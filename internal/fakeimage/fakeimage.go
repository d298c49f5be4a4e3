// Package fakeimage builds small deterministic images and multi-arch indexes
// (Docker v2 schema 2 or OCI media types) from a seed: the same Spec always
// gives the same digests. `airlock registry seed` (internal/seed) pushes them as
// stand-ins for the images a demo catalog names; tests push them to their
// registries (internal/testutil/imagetest).
//
// It builds images in memory and must not know registries, catalogs or how
// airlock copies images.
package fakeimage

import (
	"fmt"
	"math/rand/v2"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
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
		return nil, fmt.Errorf("fakeimage: index needs platforms")
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
