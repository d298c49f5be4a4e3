package catalogimage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// A catalog's first fetch, streamed: the copy engine copies the catalog image
// into the workspace's layout (as copyToLayout does) on its own goroutine,
// while the caller reads the chosen platform's config and layers as the copy
// engine writes them (layout.Destination.Follow). Only the platform's manifest
// is read ahead of the copy (from the registry, kept in memory), to learn which
// blobs to follow; everything else comes through the copy
// engine, so the layer crosses the network once, under its retry policy, and
// the extraction overlaps with the transfer instead of waiting for it.

// layoutCopy is a copy into a layout running in the background.
type layoutCopy struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// wait returns the copy's result once it finished.
func (c *layoutCopy) wait() error {
	<-c.done
	return c.err
}

// stop cancels the copy if it still runs and waits for it: nothing writes into
// the workspace once the fetch returned.
func (c *layoutCopy) stop() {
	c.cancel()
	<-c.done
}

// newStreamSource prepares the layout dir to receive repo's image while it is
// read; top returns what to read, start starts the copy.
func newStreamSource(ctx context.Context, reg *registry.Client, repo, dir string) (*streamSource, error) {
	dst, err := layout.NewDestination(dir)
	if err != nil {
		return nil, fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	return &streamSource{ctx: ctx, reg: reg, repo: repo, dst: dst, follows: map[digest.Digest]*layout.Follower{}}, nil
}

// top returns the top-level manifest m (already fetched) as a v1.ImageIndex or
// v1.Image whose chosen image's config and layers follow the copy.
func (s *streamSource) top(m endpoint.Manifest) (any, error) {
	if oci.IsIndex(m.MediaType) {
		return &streamIndex{s: s, m: m}, nil
	}
	return s.image(m)
}

// start starts the copy of the image d (every platform) into the layout, as
// copyToLayout does, once the blobs to follow are known.
func (s *streamSource) start(log *slog.Logger, d digest.Digest) *layoutCopy {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &layoutCopy{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = copyCatalogImage(ctx, s.reg, s.dst, log, s.repo, d)
		s.dst.StopFollowing(c.err)
		cancel()
	}()
	return c
}

// streamSource serves the manifests read ahead and the followed blobs.
type streamSource struct {
	ctx  context.Context
	reg  *registry.Client
	repo string
	dst  *layout.Destination

	mu      sync.Mutex
	follows map[digest.Digest]*layout.Follower // one reader per followed blob, taken once
	handed  []*layout.Follower                 // the followers read
}

// manifest reads child manifest d from the registry. It is not stored: the
// copy engine stores a manifest only after its blobs, and a layout holding a
// manifest is trusted to hold what it references.
func (s *streamSource) manifest(d digest.Digest) (endpoint.Manifest, error) {
	m, err := s.reg.Manifest(s.ctx, s.repo, d.String())
	if err == nil && m.Digest != d {
		err = fmt.Errorf("manifest %s: the registry returned %s: %w", d, m.Digest, oci.ErrDigestMismatch)
	}
	return m, err
}

// image returns the image of manifest m, following its config and layers.
func (s *streamSource) image(m endpoint.Manifest) (v1.Image, error) {
	refs, err := oci.Parse(oci.Manifest(m))
	if err != nil {
		return nil, err
	}
	for _, b := range refs.Blobs {
		r, err := s.dst.Follow(b.Digest, b.Size)
		if err != nil {
			return nil, err
		}
		if r != nil {
			s.mu.Lock()
			s.follows[b.Digest] = r
			s.mu.Unlock()
		}
	}
	return partial.CompressedToImage(&streamImage{s: s, m: m})
}

// open returns the reader of blob d: its follower the first time, the layout's
// blob once the copy wrote it.
func (s *streamSource) open(d digest.Digest, size int64) (io.ReadCloser, error) {
	s.mu.Lock()
	r := s.follows[d]
	delete(s.follows, d)
	if r != nil {
		s.handed = append(s.handed, r)
	}
	s.mu.Unlock()
	if r != nil {
		return r, nil
	}
	return s.dst.Source().Blob(s.ctx, s.repo, endpoint.Descriptor{Digest: d, Size: size})
}

// closeUnread closes the followers nobody read.
func (s *streamSource) closeUnread() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for d, r := range s.follows {
		r.Close()
		delete(s.follows, d)
	}
}

// clean reports whether every follower read handed out the committed blob
// only (layout.Follower.Clean); call it after the copy ended.
func (s *streamSource) clean() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.handed {
		if !f.Clean() {
			return false
		}
	}
	return true
}

// streamIndex is a v1.ImageIndex whose child manifests are read from the
// registry (selectPlatformImage walks it).
type streamIndex struct {
	s *streamSource
	m endpoint.Manifest
}

func (x *streamIndex) MediaType() (types.MediaType, error) {
	return types.MediaType(x.m.MediaType), nil
}
func (x *streamIndex) Digest() (v1.Hash, error)     { return v1.NewHash(x.m.Digest.String()) }
func (x *streamIndex) Size() (int64, error)         { return int64(len(x.m.Raw)), nil }
func (x *streamIndex) RawManifest() ([]byte, error) { return x.m.Raw, nil }
func (x *streamIndex) IndexManifest() (*v1.IndexManifest, error) {
	return v1.ParseIndexManifest(bytes.NewReader(x.m.Raw))
}

func (x *streamIndex) Image(h v1.Hash) (v1.Image, error) {
	m, err := x.s.manifest(digest.Digest(h.String()))
	if err != nil {
		return nil, err
	}
	return x.s.image(m)
}

func (x *streamIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	m, err := x.s.manifest(digest.Digest(h.String()))
	if err != nil {
		return nil, err
	}
	return &streamIndex{s: x.s, m: m}, nil
}

// streamImage is the partial.CompressedImageCore of an image being copied.
type streamImage struct {
	s *streamSource
	m endpoint.Manifest

	once   sync.Once
	config []byte
	err    error
}

func (i *streamImage) MediaType() (types.MediaType, error) {
	return types.MediaType(i.m.MediaType), nil
}
func (i *streamImage) RawManifest() ([]byte, error) { return i.m.Raw, nil }

// RawConfigFile reads the config as the copy writes it, verified.
func (i *streamImage) RawConfigFile() ([]byte, error) {
	i.once.Do(func() {
		mf, err := v1.ParseManifest(bytes.NewReader(i.m.Raw))
		if err != nil {
			i.err = err
			return
		}
		d := oci.Descriptor{Digest: digest.Digest(mf.Config.Digest.String()), Size: mf.Config.Size}
		rc, err := i.s.open(d.Digest, d.Size)
		if err != nil {
			i.err = err
			return
		}
		defer rc.Close()
		v := oci.NewVerifier(io.LimitReader(rc, layout.MaxManifestSize+1), d)
		b, err := io.ReadAll(v)
		if err == nil && !v.Verified() {
			err = fmt.Errorf("config %s: %w", d.Digest, oci.ErrDigestMismatch)
		}
		i.config, i.err = b, err
	})
	return i.config, i.err
}

func (i *streamImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	mf, err := v1.ParseManifest(bytes.NewReader(i.m.Raw))
	if err != nil {
		return nil, err
	}
	for _, l := range append([]v1.Descriptor{mf.Config}, mf.Layers...) {
		if l.Digest == h {
			return &streamLayer{s: i.s, desc: l}, nil
		}
	}
	return nil, fmt.Errorf("image %s has no blob %s", i.m.Digest, h)
}

// streamLayer is a layer of a streamImage: Compressed follows the copy.
type streamLayer struct {
	s    *streamSource
	desc v1.Descriptor
}

func (l *streamLayer) Digest() (v1.Hash, error)            { return l.desc.Digest, nil }
func (l *streamLayer) Size() (int64, error)                { return l.desc.Size, nil }
func (l *streamLayer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }
func (l *streamLayer) Compressed() (io.ReadCloser, error) {
	return l.s.open(digest.Digest(l.desc.Digest.String()), l.desc.Size)
}
