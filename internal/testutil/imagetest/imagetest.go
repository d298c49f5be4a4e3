// Package imagetest pushes fakeimage images to a registry for tests and says
// what was written (manifests, blobs, sizes).
//
// Test support only: the binary never links it (internal/depcheck).
package imagetest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
)

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

// Push builds spec and pushes it to ref ("host/repo:tag"). Extra remote options
// (for example remote.WithAuth) are passed through.
func Push(ctx context.Context, ref string, spec fakeimage.Spec, opts ...remote.Option) (Pushed, error) {
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
		img, err := fakeimage.Image(spec, "")
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
		idx, err := fakeimage.Index(spec)
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

// MustPush is Push for tests: it fails t on error.
func MustPush(t testing.TB, ref string, spec fakeimage.Spec, opts ...remote.Option) Pushed {
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
