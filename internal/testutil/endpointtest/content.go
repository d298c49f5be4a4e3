// Package endpointtest is the contract every endpoint.Source and
// endpoint.Destination implementation passes, in the spirit of
// go-containerregistry's validate package: Source and Destination run one
// suite of subtests against an implementation, exercising every method of the
// interface with small deterministic images (Content): manifests and blobs by
// digest and by tag, index children, absent content, content that does not
// match its digest, repeated and concurrent pushes, moved tags, mounts, a
// cancelled context. Each implementation's package has a TestContract calling
// it.
//
// It knows only the endpoint interfaces and the OCI vocabulary, never an
// implementation, so that the suite says what the interfaces promise.
//
// Test support only: the binary never links it (internal/depcheck).
package endpointtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Blob is one config or layer of Content, with its bytes.
type Blob struct {
	Descriptor endpoint.Descriptor
	Data       []byte
}

// Image is one manifest of Content: tagged, or (Tag "") a child of an index
// pushed by digest.
type Image struct {
	Manifest endpoint.Manifest
	Tag      string
}

// Content is what the suites push and read: an OCI image (tag v1), a Docker
// schema 2 image (tag v2) and an OCI index of two platform images (tag multi),
// sharing a layer, in one repository.
type Content struct {
	// Repo is the repository path of the images ("contract/app"); an endpoint
	// that needs a host in its repository names prefixes it.
	Repo string
	// Blobs are every config and layer, each once.
	Blobs []Blob
	// Images are every manifest, children before the index that lists them
	// (the order they are pushed in).
	Images []Image
}

// NewContent returns the suites' images. The same call gives the same bytes.
func NewContent() *Content {
	rng := rand.New(rand.NewPCG(7, 11))
	c := &Content{Repo: "contract/app"}
	layer := func(n int) endpoint.Descriptor {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return c.addBlob("application/vnd.oci.image.layer.v1.tar+gzip", b)
	}
	config := func(arch string) endpoint.Descriptor {
		b, _ := json.Marshal(map[string]any{"architecture": arch, "os": "linux", "rootfs": map[string]any{"type": "layers"}, "config": map[string]any{"Labels": map[string]string{"contract": arch}}})
		return c.addBlob("application/vnd.oci.image.config.v1+json", b)
	}
	shared, big, small, tiny := layer(1024), layer(48<<10), layer(3000), layer(2000)
	c.addManifest("v1", oci.MediaTypeOCIManifest, config("amd64"), shared, big)
	c.addManifest("v2", oci.MediaTypeDockerManifest, config("ppc64le"), shared, small)
	amd := c.addManifest("", oci.MediaTypeOCIManifest, config("amd64-child"), shared, tiny)
	arm := c.addManifest("", oci.MediaTypeOCIManifest, config("arm64-child"), big)
	idx, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": oci.MediaTypeOCIIndex,
		"manifests": []any{
			map[string]any{"mediaType": amd.MediaType, "digest": amd.Digest, "size": len(amd.Raw), "platform": map[string]string{"os": "linux", "architecture": "amd64"}},
			map[string]any{"mediaType": arm.MediaType, "digest": arm.Digest, "size": len(arm.Raw), "platform": map[string]string{"os": "linux", "architecture": "arm64"}},
		},
	})
	c.Images = append(c.Images, Image{Tag: "multi", Manifest: endpoint.Manifest{MediaType: oci.MediaTypeOCIIndex, Digest: digest.FromBytes(idx), Raw: idx}})
	return c
}

func (c *Content) addBlob(mt string, b []byte) endpoint.Descriptor {
	d := endpoint.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
	c.Blobs = append(c.Blobs, Blob{Descriptor: d, Data: b})
	return d
}

// addManifest adds an image manifest of media type mt (OCI or Docker schema 2)
// with config cfg and layers, under tag ("" for an index's child).
func (c *Content) addManifest(tag, mt string, cfg endpoint.Descriptor, layers ...endpoint.Descriptor) endpoint.Manifest {
	cmt, lmt := cfg.MediaType, layers[0].MediaType
	if mt == oci.MediaTypeDockerManifest {
		cmt, lmt = "application/vnd.docker.container.image.v1+json", "application/vnd.docker.image.rootfs.diff.tar.gzip"
	}
	desc := func(d endpoint.Descriptor, mt string) map[string]any {
		return map[string]any{"mediaType": mt, "digest": d.Digest, "size": d.Size}
	}
	var ls []any
	for _, l := range layers {
		ls = append(ls, desc(l, lmt))
	}
	raw, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mt, "config": desc(cfg, cmt), "layers": ls})
	m := endpoint.Manifest{MediaType: mt, Digest: digest.FromBytes(raw), Raw: raw}
	c.Images = append(c.Images, Image{Manifest: m, Tag: tag})
	return m
}

// Tagged returns the images pushed under a tag.
func (c *Content) Tagged() []Image {
	var out []Image
	for _, im := range c.Images {
		if im.Tag != "" {
			out = append(out, im)
		}
	}
	return out
}

// Reference is where im is pushed: its tag, or its digest for a child.
func (im Image) Reference() string {
	if im.Tag != "" {
		return im.Tag
	}
	return im.Manifest.Digest.String()
}

// Blob returns the blob of Content with digest d.
func (c *Content) Blob(d digest.Digest) (Blob, bool) {
	for _, b := range c.Blobs {
		if b.Descriptor.Digest == d {
			return b, true
		}
	}
	return Blob{}, false
}

// Push writes c into repo of dst as the copy engine does: blobs first, then
// each manifest after what it references (children by digest, then the tagged
// manifests). Implementations' tests use it to seed a Source they read from.
func (c *Content) Push(ctx context.Context, dst endpoint.Destination, repo string) error {
	for _, b := range c.Blobs {
		if err := dst.PutBlob(ctx, repo, b.Descriptor, bytes.NewReader(b.Data)); err != nil {
			return fmt.Errorf("push blob %s: %w", b.Descriptor.Digest, err)
		}
	}
	for _, im := range c.Images {
		if err := dst.PutManifest(ctx, repo, im.Reference(), im.Manifest); err != nil {
			return fmt.Errorf("push manifest %s: %w", im.Reference(), err)
		}
	}
	return nil
}

// absent is a descriptor no Content holds.
func absent(what string) endpoint.Descriptor {
	b := []byte("endpointtest: absent " + what)
	return endpoint.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromBytes(b), Size: int64(len(b))}
}
