package transfer

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// platformBlobs reads, with go-containerregistry (not airlock's client), the
// children of index ref by platform: child digest and its config and layers.
func platformBlobs(t *testing.T, ref string) map[string]struct {
	child digest.Digest
	blobs map[digest.Digest]int64
} {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		child digest.Digest
		blobs map[digest.Digest]int64
	}{}
	for _, c := range im.Manifests {
		img, err := idx.Image(c.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		blobs := map[digest.Digest]int64{digest.Digest(m.Config.Digest.String()): m.Config.Size}
		for _, l := range m.Layers {
			blobs[digest.Digest(l.Digest.String())] = l.Size
		}
		out[c.Platform.OS+"/"+c.Platform.Architecture] = struct {
			child digest.Digest
			blobs map[digest.Digest]int64
		}{digest.Digest(c.Digest.String()), blobs}
	}
	return out
}

// exists asks the destination, with go-containerregistry for manifests and a
// plain HEAD for blobs (never airlock's client), whether repo holds d.
func exists(t *testing.T, repo string, d digest.Digest, blob bool) bool {
	t.Helper()
	if blob {
		host, path, _ := strings.Cut(repo, "/")
		resp, err := http.Head("http://" + host + "/v2/" + path + "/blobs/" + d.String())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	ref, err := name.NewDigest(repo+"@"+d.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	_, err = remote.Head(ref)
	return err == nil
}

// tagDigest reads what ref's tag holds with go-containerregistry.
func tagDigest(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(r)
	if err != nil {
		return err.Error()
	}
	return d.Digest.String()
}

// A platform subset of a two-arch index: only the chosen platform's child and
// blobs are sent, the index keeps its digest (sparse), a second run with both
// platforms sends the other child, and the dry-run estimate counts the same
// bytes as the copy sent.
func TestCopyPlatformSubset(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 1, 1, func(int) fakeimage.Spec {
		return fakeimage.Spec{Seed: 41, BaseSeed: 3, BaseLayers: 1, Layers: 2, LayerSize: 4096, Platforms: []string{"linux/amd64", "linux/arm64"}}
	})
	byPlat := platformBlobs(t, imgs[0].Ref)
	amd, arm := byPlat["linux/amd64"], byPlat["linux/arm64"]
	var amdBytes, allBytes int64
	all := map[digest.Digest]int64{}
	for d, n := range amd.blobs {
		amdBytes += n
		all[d] = n
	}
	for d, n := range arm.blobs {
		all[d] = n
	}
	for _, n := range all {
		allBytes += n
	}
	jobs := jobsFor(imgs, src.Host(), dst.Host())
	jobs[0].Platforms = []string{"linux/amd64"}

	full, err := EstimatePlan(ctx, testRegistry(), testRegistry(), jobsFor(imgs, src.Host(), dst.Host()), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	est, err := EstimatePlan(ctx, testRegistry(), testRegistry(), jobs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if full.BytesToSend != allBytes || est.BytesToSend != amdBytes {
		t.Fatalf("estimate: %d bytes without the subset (want %d), %d with it (want %d)", full.BytesToSend, allBytes, est.BytesToSend, amdBytes)
	}

	rep, err := Copy(ctx, testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BytesSent != amdBytes {
		t.Errorf("sent %d bytes, want the amd64 child's %d (both platforms: %d)", rep.BytesSent, amdBytes, allBytes)
	}
	dest := jobs[0].Dest
	if got := tagDigest(t, dest+":"+jobs[0].Tags[0]); got != imgs[0].Digest.String() {
		t.Fatalf("destination tag holds %q, want the original index %s", got, imgs[0].Digest)
	}
	if !exists(t, dest, amd.child, false) || exists(t, dest, arm.child, false) {
		t.Errorf("amd64 child present %v, arm64 child present %v: want true, false", exists(t, dest, amd.child, false), exists(t, dest, arm.child, false))
	}
	for d := range arm.blobs {
		if _, shared := amd.blobs[d]; !shared && exists(t, dest, d, true) {
			t.Errorf("arm64 blob %s was sent", d)
		}
	}

	// Widening the subset: the held sparse index gets its arm64 child.
	jobs[0].Platforms = []string{"linux/amd64", "linux/arm64"}
	rep, err = Copy(ctx, testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(t, dest, arm.child, false) || rep.BytesSent != allBytes-amdBytes || rep.Images[0].Status != StatusCopied {
		t.Errorf("widened: arm64 child present %v, %d bytes sent (want %d), status %s", exists(t, dest, arm.child, false), rep.BytesSent, allBytes-amdBytes, rep.Images[0].Status)
	}

	// A no-op re-run with a subset reads the held index again (to see whether
	// the subset wants children it lacks), at the destination: the image,
	// pinned by digest, costs the source nothing.
	for _, plats := range [][]string{{"linux/amd64"}, {"linux/amd64", "linux/arm64"}} {
		jobs[0].Platforms = plats
		src.Reset()
		rep, err = Copy(ctx, testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
		if err != nil {
			t.Fatal(err)
		}
		if n := requestsBeyondBase(src.Counts()); n != 0 || rep.Images[0].Status != StatusSkipped {
			t.Errorf("no-op re-run with platforms %v: %s, %d source requests (%v), want skipped and none", plats, rep.Images[0].Status, n, src.Counts().ByPath)
		}
	}
}

// What a subset cannot do is an error naming the image and the fix: an index
// without any platform asked for, and a destination that checks an index's
// children (Distribution's default configuration).
func TestCopyPlatformSubsetErrors(t *testing.T) {
	ctx := context.Background()
	src := registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 1, 1, func(int) fakeimage.Spec {
		return fakeimage.Spec{Seed: 42, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}}
	})
	strict := registrytest.StartKind(t, registrytest.DistributionV3)
	tests := []struct {
		name      string
		dst       string
		platforms []string
		want      error
	}{
		{"no such platform", registrytest.Start(t).Host(), []string{"linux/s390x"}, ErrNoPlatform},
		{"destination checks children", strict.Host, []string{"linux/arm64"}, ErrSparseIndexRefused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jobs := jobsFor(imgs, src.Host(), tc.dst)
			jobs[0].Platforms = tc.platforms
			rep, err := Copy(ctx, testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
			if !errors.Is(err, ErrFailed) || len(rep.Failed()) != 1 {
				t.Fatalf("copy: %v, want one failed image", err)
			}
			if msg := rep.Failed()[0].Err; !strings.Contains(msg, tc.platforms[0]) || !strings.Contains(msg, "platforms") {
				t.Errorf("message %q does not name the platform and the fix", msg)
			}
			// The engine's own error carries the sentinel.
			e := newCopyEngine(testRegistry(), testRegistry(), Options{Retry: mirrortest.FastRetry})
			if err := e.copyImage(ctx, &ImageResult{Job: jobs[0]}, nil); !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
}
