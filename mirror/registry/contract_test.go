package registry_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/endpointtest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// TestContract runs the endpoint contract against the registry client and a
// real CNCF Distribution registry on 127.0.0.1, through the public
// constructor only. The Source is seeded, and the Destination read back, with
// go-containerregistry, not with the client under test.
func TestContract(t *testing.T) {
	t.Run("Source", func(t *testing.T) {
		endpointtest.Source(t, endpointtest.SourceCase{
			NotFound: endpoint.ErrNotFound,
			Seed: func(t *testing.T, c *endpointtest.Content) (endpoint.Source, string) {
				reg := registrytest.Start(t)
				repo := reg.Host() + "/" + c.Repo
				seedWithGGCR(t, repo, c)
				return registry.New(registry.Options{}), repo
			},
		})
	})
	t.Run("Destination", func(t *testing.T) {
		endpointtest.Destination(t, endpointtest.DestinationCase{
			New: func(t *testing.T) *endpointtest.Dest {
				reg := registrytest.Start(t)
				return &endpointtest.Dest{
					Destination: registry.New(registry.Options{}),
					Repo:        func(path string) string { return reg.Host() + "/" + path },
					ReadBack:    func(*testing.T, []endpointtest.Tagged) endpoint.Source { return ggcrSource{} },
				}
			},
		})
	})
}

// seedWithGGCR pushes c into repo with go-containerregistry.
func seedWithGGCR(t *testing.T, repo string, c *endpointtest.Content) {
	t.Helper()
	r, err := name.NewRepository(repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range c.Blobs {
		if err := remote.WriteLayer(r, static.NewLayer(b.Data, types.MediaType(b.Descriptor.MediaType))); err != nil {
			t.Fatal(err)
		}
	}
	for _, im := range c.Images {
		ref, err := name.ParseReference(repo+refSep(im.Reference())+im.Reference(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Put(ref, rawManifest{im.Manifest}); err != nil {
			t.Fatal(err)
		}
	}
}

func refSep(ref string) string {
	if strings.HasPrefix(ref, "sha256:") {
		return "@"
	}
	return ":"
}

// rawManifest is a manifest as go-containerregistry's remote.Put takes it.
type rawManifest struct{ m endpoint.Manifest }

func (r rawManifest) RawManifest() ([]byte, error)        { return r.m.Raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.MediaType(r.m.MediaType), nil }

// ggcrSource reads a registry with go-containerregistry: the Destination
// contract's read back.
type ggcrSource struct{}

func (ggcrSource) Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	ref, err := name.ParseReference(repo+refSep(reference)+reference, name.Insecure)
	if err != nil {
		return endpoint.Manifest{}, err
	}
	d, err := remote.Get(ref, remote.WithContext(ctx))
	if err != nil {
		return endpoint.Manifest{}, err
	}
	return endpoint.Manifest{MediaType: string(d.MediaType), Digest: digest.Digest(d.Digest.String()), Raw: d.Manifest}, nil
}

func (ggcrSource) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	ref, err := name.NewDigest(repo+"@"+d.Digest.String(), name.Insecure)
	if err != nil {
		return nil, err
	}
	l, err := remote.Layer(ref, remote.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	return io.NopCloser(bytes.NewReader(b)), err
}
