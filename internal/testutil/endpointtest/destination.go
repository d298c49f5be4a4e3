package endpointtest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// Dest is a Destination under test, empty, with what the suite needs to know
// about it.
type Dest struct {
	endpoint.Destination
	// Repo names the destination's repository of path ("contract/app"): with
	// its registry host, for instance; nil uses path itself.
	Repo func(path string) string
	// ReadBack, when set, returns a Source reading what was pushed (after
	// finishing the destination if it must be, as an archive is): tagged are
	// the manifests pushed under a tag, with their repository.
	ReadBack func(t *testing.T, tagged []Tagged) endpoint.Source
}

// Tagged is a manifest pushed into Repo under Tag.
type Tagged struct {
	Repo, Tag string
	Manifest  endpoint.Manifest
}

// DestinationCase says how to make the Destination under test.
type DestinationCase struct {
	// New returns an empty Destination; it is called by every subtest.
	New func(t *testing.T) *Dest
}

func (d *Dest) repo(path string) string {
	if d.Repo == nil {
		return path
	}
	return d.Repo(path)
}

// Destination runs the Destination contract: content pushed as the copy
// engine pushes it (blobs, children by digest, tagged manifests) is then held
// (BlobExists, ManifestExists by tag and by digest) and reads back identical;
// nothing is held before it is pushed; pushing again is harmless; a blob or a
// manifest whose bytes do not match its digest (or size) is refused and not
// committed; a tag moved to another manifest says so; a mount never claims a
// blob it did not make available; an Uploader's uploads follow the same rules;
// a cancelled context commits nothing; concurrent pushes of the same content
// succeed.
func Destination(t *testing.T, dc DestinationCase) {
	ctx := context.Background()
	c := NewContent()

	t.Run("PushThenHeld", func(t *testing.T) {
		d := dc.New(t)
		repo := d.repo(c.Repo)
		if err := c.Push(ctx, d, repo); err != nil {
			t.Fatal(err)
		}
		checkHeld(t, d, repo, c)
		if d.ReadBack == nil {
			return
		}
		var tagged []Tagged
		for _, im := range c.Tagged() {
			tagged = append(tagged, Tagged{Repo: repo, Tag: im.Tag, Manifest: im.Manifest})
		}
		src := d.ReadBack(t, tagged)
		for _, im := range c.Images {
			m, err := src.Manifest(ctx, repo, im.Reference())
			if err != nil {
				t.Errorf("read back manifest %s: %v", im.Reference(), err)
				continue
			}
			sameManifest(t, im.Reference(), m, im.Manifest)
		}
		for _, b := range c.Blobs {
			if got := readBlob(t, src, repo, b.Descriptor); got != nil && !bytes.Equal(got, b.Data) {
				t.Errorf("read back blob %s: other bytes", b.Descriptor.Digest)
			}
		}
	})
	t.Run("NothingHeldBeforePush", func(t *testing.T) {
		d := dc.New(t)
		repo := d.repo(c.Repo)
		for _, b := range c.Blobs {
			if ok, err := d.BlobExists(ctx, repo, b.Descriptor); ok || err != nil {
				t.Errorf("BlobExists(%s) on an empty destination: %v, %v", b.Descriptor.Digest, ok, err)
			}
		}
		for _, im := range c.Images {
			if ok, err := d.ManifestExists(ctx, repo, im.Reference(), im.Manifest.Digest); ok || err != nil {
				t.Errorf("ManifestExists(%s) on an empty destination: %v, %v", im.Reference(), ok, err)
			}
		}
	})
	t.Run("PushTwice", func(t *testing.T) {
		d := dc.New(t)
		repo := d.repo(c.Repo)
		for i := range 2 {
			if err := c.Push(ctx, d, repo); err != nil {
				t.Fatalf("push %d: %v", i+1, err)
			}
		}
		checkHeld(t, d, repo, c)
	})
	t.Run("BlobNotMatchingRefused", func(t *testing.T) {
		d := dc.New(t)
		repo := d.repo(c.Repo)
		b := c.Blobs[1]
		flipped := bytes.Clone(b.Data)
		flipped[len(flipped)/2] ^= 0xff
		for name, data := range map[string][]byte{
			"a flipped byte": flipped,
			"cut short":      b.Data[:len(b.Data)/2],
			"a byte more":    append(bytes.Clone(b.Data), 0),
		} {
			if err := d.PutBlob(ctx, repo, b.Descriptor, bytes.NewReader(data)); err == nil {
				t.Errorf("PutBlob with %s: no error", name)
			}
			if ok, err := d.BlobExists(ctx, repo, b.Descriptor); ok || err != nil {
				t.Errorf("after PutBlob with %s refused: BlobExists %v, %v", name, ok, err)
			}
		}
	})
	t.Run("ManifestNotMatchingRefused", func(t *testing.T) {
		d := dc.New(t)
		repo := d.repo(c.Repo)
		pushBlobs(t, d, repo, c)
		im := c.Tagged()[0]
		altered := im.Manifest
		altered.Raw = append(bytes.Clone(altered.Raw), ' ')
		if err := d.PutManifest(ctx, repo, "altered", altered); err == nil {
			t.Error("PutManifest of bytes that are not its digest's: no error")
		}
		for _, dg := range []digest.Digest{im.Manifest.Digest, digest.FromBytes(altered.Raw)} {
			if ok, err := d.ManifestExists(ctx, repo, "altered", dg); ok || err != nil {
				t.Errorf("after the altered push was refused: ManifestExists(altered, %s) %v, %v", dg, ok, err)
			}
		}
		other := c.Tagged()[1].Manifest.Digest.String()
		if err := d.PutManifest(ctx, repo, other, im.Manifest); err == nil {
			t.Errorf("PutManifest of %s under the digest %s: no error", im.Manifest.Digest, other)
		}
	})
	t.Run("TagMoves", func(t *testing.T) {
		d := dc.New(t)
		repo := d.repo(c.Repo)
		pushBlobs(t, d, repo, c)
		first, second := c.Tagged()[0].Manifest, c.Tagged()[1].Manifest
		for _, m := range []endpoint.Manifest{first, second} {
			if err := d.PutManifest(ctx, repo, "moving", m); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := d.ManifestExists(ctx, repo, "moving", second.Digest); !ok || err != nil {
			t.Errorf("ManifestExists(moving, the manifest it was moved to): %v, %v", ok, err)
		}
		if ok, err := d.ManifestExists(ctx, repo, "moving", first.Digest); ok || err != nil {
			t.Errorf("ManifestExists(moving, the manifest it was moved from): %v, %v", ok, err)
		}
		if d.ReadBack != nil {
			m, err := d.ReadBack(t, []Tagged{{Repo: repo, Tag: "moving", Manifest: second}}).Manifest(ctx, repo, "moving")
			if err != nil || m.Digest != second.Digest {
				t.Errorf("read back moving: %s, %v; want %s", m.Digest, err, second.Digest)
			}
		}
	})
	t.Run("Mount", func(t *testing.T) {
		d := dc.New(t)
		from, to := d.repo(c.Repo), d.repo(c.Repo+"-mounted")
		b := c.Blobs[0]
		if err := d.PutBlob(ctx, from, b.Descriptor, bytes.NewReader(b.Data)); err != nil {
			t.Fatal(err)
		}
		ok, err := d.MountBlob(ctx, to, from, b.Descriptor)
		if err != nil {
			t.Fatalf("MountBlob of a blob %s holds: %v", from, err)
		}
		if held, err := d.BlobExists(ctx, to, b.Descriptor); ok && (!held || err != nil) {
			t.Errorf("MountBlob said it mounted %s into %s, which does not hold it: %v, %v", b.Descriptor.Digest, to, held, err)
		}
		gone := absent("mounted blob")
		if ok, err := d.MountBlob(ctx, to, from, gone); ok {
			t.Errorf("MountBlob of a blob %s does not hold: mounted (%v)", from, err)
		}
		if held, err := d.BlobExists(ctx, to, gone); held || err != nil {
			t.Errorf("after mounting an absent blob: BlobExists %v, %v", held, err)
		}
	})
	t.Run("Uploader", func(t *testing.T) {
		d := dc.New(t)
		up, ok := d.Destination.(endpoint.Uploader)
		if !ok {
			t.Skip("not an endpoint.Uploader")
		}
		uploads(t, d, up, c)
	})
	t.Run("CancelledContext", func(t *testing.T) {
		d := dc.New(t)
		repo := d.repo(c.Repo)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		b := c.Blobs[1]
		if err := d.PutBlob(cctx, repo, b.Descriptor, bytes.NewReader(b.Data)); !errors.Is(err, context.Canceled) {
			t.Errorf("PutBlob with a cancelled context: %v, want an error wrapping context.Canceled", err)
		}
		if ok, err := d.BlobExists(ctx, repo, b.Descriptor); ok || err != nil {
			t.Errorf("after PutBlob with a cancelled context: BlobExists %v, %v", ok, err)
		}
		pushBlobs(t, d, repo, c)
		im := c.Tagged()[0]
		if err := d.PutManifest(cctx, repo, im.Tag, im.Manifest); !errors.Is(err, context.Canceled) {
			t.Errorf("PutManifest with a cancelled context: %v, want an error wrapping context.Canceled", err)
		}
		if ok, err := d.ManifestExists(ctx, repo, im.Tag, im.Manifest.Digest); ok || err != nil {
			t.Errorf("after PutManifest with a cancelled context: ManifestExists %v, %v", ok, err)
		}
		// An existence check may still answer (rightly) or fail with the
		// context's error; never a wrong answer, never another error.
		for _, check := range []struct {
			what string
			held bool
			f    func() (bool, error)
		}{
			{"BlobExists of a blob pushed", true, func() (bool, error) { return d.BlobExists(cctx, repo, b.Descriptor) }},
			{"ManifestExists of a manifest not pushed", false, func() (bool, error) { return d.ManifestExists(cctx, repo, im.Tag, im.Manifest.Digest) }},
		} {
			ok, err := check.f()
			if err == nil && ok != check.held || err != nil && (ok || !errors.Is(err, context.Canceled)) {
				t.Errorf("%s, with a cancelled context: %v, %v; want %v, or an error wrapping context.Canceled", check.what, ok, err, check.held)
			}
		}
	})
	t.Run("ConcurrentPushes", func(t *testing.T) {
		d := dc.New(t)
		repo := d.repo(c.Repo)
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				if err := c.Push(ctx, d, repo); err != nil {
					t.Errorf("concurrent push: %v", err)
				}
			})
		}
		wg.Wait()
		checkHeld(t, d, repo, c)
	})
}

// checkHeld checks that d holds every blob and manifest of c in repo, and
// every manifest under its reference and its digest.
func checkHeld(t *testing.T, d endpoint.Destination, repo string, c *Content) {
	t.Helper()
	ctx := context.Background()
	for _, b := range c.Blobs {
		if ok, err := d.BlobExists(ctx, repo, b.Descriptor); !ok || err != nil {
			t.Errorf("BlobExists(%s, %s) after its push: %v, %v", repo, b.Descriptor.Digest, ok, err)
		}
	}
	for _, im := range c.Images {
		refs := []string{im.Manifest.Digest.String()}
		if im.Tag != "" {
			refs = append(refs, im.Tag)
		}
		for _, ref := range slices.Compact(refs) {
			if ok, err := d.ManifestExists(ctx, repo, ref, im.Manifest.Digest); !ok || err != nil {
				t.Errorf("ManifestExists(%s, %s, %s) after its push: %v, %v", repo, ref, im.Manifest.Digest, ok, err)
			}
		}
	}
}

// pushBlobs pushes every blob of c.
func pushBlobs(t *testing.T, d endpoint.Destination, repo string, c *Content) {
	t.Helper()
	for _, b := range c.Blobs {
		if err := d.PutBlob(context.Background(), repo, b.Descriptor, bytes.NewReader(b.Data)); err != nil {
			t.Fatal(err)
		}
	}
}

// uploads checks an Uploader: an upload of an absent blob refuses bytes that
// do not match and commits nothing; a cancelled upload commits nothing; a
// matching write commits the blob; a blob held needs no upload.
func uploads(t *testing.T, d *Dest, up endpoint.Uploader, c *Content) {
	ctx := context.Background()
	repo := d.repo(c.Repo)
	b := c.Blobs[1]
	u, err := up.StartBlob(ctx, repo, b.Descriptor)
	if err != nil || u == nil {
		t.Fatalf("StartBlob of an absent blob: %v, %v", u, err)
	}
	u.Cancel(ctx)
	if ok, err := d.BlobExists(ctx, repo, b.Descriptor); ok || err != nil {
		t.Errorf("after a cancelled upload: BlobExists %v, %v", ok, err)
	}
	u, err = up.StartBlob(ctx, repo, b.Descriptor)
	if err != nil || u == nil {
		t.Fatalf("StartBlob of an absent blob: %v, %v", u, err)
	}
	flipped := bytes.Clone(b.Data)
	flipped[0] ^= 0xff
	if err := u.Write(ctx, bytes.NewReader(flipped)); err == nil {
		t.Error("an upload of bytes that are not the blob's: no error")
	}
	if ok, err := d.BlobExists(ctx, repo, b.Descriptor); ok || err != nil {
		t.Errorf("after a refused upload: BlobExists %v, %v", ok, err)
	}
	if u, err = up.StartBlob(ctx, repo, b.Descriptor); err != nil || u == nil {
		t.Fatalf("StartBlob of an absent blob: %v, %v", u, err)
	}
	if err := u.Write(ctx, bytes.NewReader(b.Data)); err != nil {
		t.Fatalf("an upload of the blob's bytes: %v", err)
	}
	if ok, err := d.BlobExists(ctx, repo, b.Descriptor); !ok || err != nil {
		t.Errorf("after the upload: BlobExists %v, %v", ok, err)
	}
	if u, err := up.StartBlob(ctx, repo, b.Descriptor); u != nil || err != nil {
		t.Errorf("StartBlob of a blob the repository holds: %v, %v; want nothing to send", u, err)
		if u != nil {
			u.Cancel(ctx)
		}
	}
}
