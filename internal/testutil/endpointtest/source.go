package endpointtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// SourceCase says how to make the Source under test.
type SourceCase struct {
	// Seed returns a Source holding c's images and the repository name they
	// are read under (c.Repo, with a host for a registry). It is called once;
	// the subtests only read.
	Seed func(t *testing.T, c *Content) (src endpoint.Source, repo string)
	// NotFound, when set, is the error the Source wraps for a manifest or blob
	// it does not hold (errors.Is); nil accepts any error.
	NotFound error
}

// Source runs the Source contract: every manifest of the seeded Content by tag
// and by digest, with its media type and exact bytes; an index's children
// reachable by digest; every blob's bytes; absent manifests and blobs fail
// (wrapping NotFound); a cancelled context fails the read; concurrent reads
// see the same bytes.
func Source(t *testing.T, sc SourceCase) {
	c := NewContent()
	src, repo := sc.Seed(t, c)
	ctx := context.Background()

	t.Run("ManifestByTag", func(t *testing.T) {
		for _, im := range c.Tagged() {
			m, err := src.Manifest(ctx, repo, im.Tag)
			if err != nil {
				t.Errorf("Manifest(%s, %s): %v", repo, im.Tag, err)
				continue
			}
			sameManifest(t, im.Tag, m, im.Manifest)
		}
	})
	t.Run("ManifestByDigest", func(t *testing.T) {
		for _, im := range c.Images {
			d := im.Manifest.Digest.String()
			m, err := src.Manifest(ctx, repo, d)
			if err != nil {
				t.Errorf("Manifest(%s, %s): %v", repo, d, err)
				continue
			}
			sameManifest(t, d, m, im.Manifest)
		}
	})
	t.Run("IndexChildren", func(t *testing.T) {
		indexes := 0
		for _, im := range c.Tagged() {
			if !oci.IsIndex(im.Manifest.MediaType) {
				continue
			}
			indexes++
			m, err := src.Manifest(ctx, repo, im.Tag)
			if err != nil {
				t.Fatalf("Manifest(%s, %s): %v", repo, im.Tag, err)
			}
			refs, err := oci.Parse(m)
			if err != nil || len(refs.Manifests) == 0 {
				t.Fatalf("index %s: %d children, %v", im.Tag, len(refs.Manifests), err)
			}
			for _, ch := range refs.Manifests {
				cm, err := src.Manifest(ctx, repo, ch.Digest.String())
				if err != nil {
					t.Errorf("child %s of %s: %v", ch.Digest, im.Tag, err)
					continue
				}
				if cm.Digest != ch.Digest || int64(len(cm.Raw)) != ch.Size || cm.MediaType != ch.MediaType {
					t.Errorf("child %s of %s: got %s, %d bytes, %s; the index says %d bytes, %s", ch.Digest, im.Tag, cm.Digest, len(cm.Raw), cm.MediaType, ch.Size, ch.MediaType)
				}
				crefs, err := oci.Parse(cm)
				if err != nil {
					t.Errorf("child %s: %v", ch.Digest, err)
					continue
				}
				for _, b := range crefs.Blobs {
					readBlob(t, src, repo, b)
				}
			}
		}
		if indexes == 0 {
			t.Fatal("the content has no index")
		}
	})
	t.Run("Blobs", func(t *testing.T) {
		for _, b := range c.Blobs {
			if got := readBlob(t, src, repo, b.Descriptor); got != nil && !bytes.Equal(got, b.Data) {
				t.Errorf("Blob(%s, %s): %d bytes that differ from the %d pushed", repo, b.Descriptor.Digest, len(got), len(b.Data))
			}
		}
	})
	t.Run("AbsentManifest", func(t *testing.T) {
		for _, ref := range []string{"absent-tag", absent("manifest").Digest.String()} {
			m, err := src.Manifest(ctx, repo, ref)
			if err == nil {
				t.Errorf("Manifest(%s, %s) of an absent manifest: %d bytes, no error", repo, ref, len(m.Raw))
				continue
			}
			if sc.NotFound != nil && !errors.Is(err, sc.NotFound) {
				t.Errorf("Manifest(%s, %s) of an absent manifest: %v, which does not wrap %v", repo, ref, err, sc.NotFound)
			}
		}
	})
	t.Run("AbsentBlob", func(t *testing.T) {
		d := absent("blob")
		rc, err := src.Blob(ctx, repo, d)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(rc)
			rc.Close()
			if err == nil {
				t.Fatalf("Blob(%s, %s) of an absent blob: read %d bytes, no error", repo, d.Digest, len(b))
			}
		}
		if sc.NotFound != nil && !errors.Is(err, sc.NotFound) {
			t.Errorf("Blob(%s, %s) of an absent blob: %v, which does not wrap %v", repo, d.Digest, err, sc.NotFound)
		}
	})
	t.Run("CancelledContext", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		im := c.Tagged()[0]
		if _, err := src.Manifest(cctx, repo, im.Tag); !errors.Is(err, context.Canceled) {
			t.Errorf("Manifest with a cancelled context: %v, want an error wrapping context.Canceled", err)
		}
		b := c.Blobs[0]
		rc, err := src.Blob(cctx, repo, b.Descriptor)
		if err == nil {
			_, err = io.ReadAll(rc)
			rc.Close()
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Blob with a cancelled context (opened or read): %v, want an error wrapping context.Canceled", err)
		}
	})
	t.Run("ConcurrentReads", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for _, im := range c.Images {
					if m, err := src.Manifest(ctx, repo, im.Reference()); err != nil || !bytes.Equal(m.Raw, im.Manifest.Raw) {
						t.Errorf("concurrent Manifest(%s): %v", im.Reference(), err)
					}
				}
				for _, b := range c.Blobs {
					if got := readBlob(t, src, repo, b.Descriptor); got != nil && !bytes.Equal(got, b.Data) {
						t.Errorf("concurrent Blob(%s): other bytes", b.Descriptor.Digest)
					}
				}
			})
		}
		wg.Wait()
	})
}

// sameManifest checks that m, read as ref, is want: digest, bytes and media type.
func sameManifest(t *testing.T, ref string, m, want endpoint.Manifest) {
	t.Helper()
	if m.Digest != want.Digest || !bytes.Equal(m.Raw, want.Raw) {
		t.Errorf("manifest %s: got %s (%d bytes), want %s (%d bytes)", ref, m.Digest, len(m.Raw), want.Digest, len(want.Raw))
	}
	if m.MediaType != want.MediaType {
		t.Errorf("manifest %s: media type %q, want %q", ref, m.MediaType, want.MediaType)
	}
}

// readBlob reads blob d whole; nil (and an error reported) when it fails.
func readBlob(t *testing.T, src endpoint.Source, repo string, d endpoint.Descriptor) []byte {
	t.Helper()
	rc, err := src.Blob(context.Background(), repo, d)
	if err != nil {
		t.Errorf("Blob(%s, %s): %v", repo, d.Digest, err)
		return nil
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Errorf("reading blob %s of %s: %v", d.Digest, repo, err)
		return nil
	}
	if int64(len(b)) != d.Size || d.Digest.Algorithm().FromBytes(b) != d.Digest {
		t.Errorf("blob %s of %s: %d bytes hashing to %s", d.Digest, repo, len(b), d.Digest.Algorithm().FromBytes(b))
	}
	return b
}
