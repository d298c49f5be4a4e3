package transfer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// TestCopyElsewhere covers Options.Elsewhere, the blobs another shard
// sends: two images on one base layer, copied by two concurrent Copy runs (two
// shards); the one told the base is sent elsewhere waits for it and mounts it,
// so the base is sent once. When the other shard never sends it, the wait runs
// out and the run sends it itself.
func TestCopyElsewhere(t *testing.T) {
	src := registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 2, 2, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(40 + i), BaseSeed: 4, BaseLayers: 1, Layers: 1, LayerSize: 4096}
	})
	base := map[digest.Digest]bool{}
	for _, b := range imgs[0].Blobs {
		for _, c := range imgs[1].Blobs {
			if b == c {
				base[b] = true
			}
		}
	}
	if len(base) != 1 {
		t.Fatalf("%d shared blobs, want the base layer", len(base))
	}
	var shared digest.Digest
	for d := range base {
		shared = d
	}
	ctx := context.Background()

	t.Run("mounted from the other shard", func(t *testing.T) {
		dst := registrytest.Start(t)
		jobs := jobsFor(imgs, src.Host(), dst.Host())
		var wg sync.WaitGroup
		reps := make([]*Report, 2)
		errs := make([]error, 2)
		// Shard 1 starts first and waits; shard 0 owns the base.
		wg.Add(2)
		go func() {
			defer wg.Done()
			reps[1], errs[1] = Copy(ctx, testRegistry(), testRegistry(), jobs[1:], Options{Retry: mirrortest.FastRetry, Elsewhere: map[digest.Digest]string{shared: jobs[0].Dest}})
		}()
		go func() {
			defer wg.Done()
			time.Sleep(200 * time.Millisecond)
			reps[0], errs[0] = Copy(ctx, testRegistry(), testRegistry(), jobs[:1], Options{Retry: mirrortest.FastRetry})
		}()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("shard %d: %v", i, err)
			}
		}
		if reps[1].BlobsMounted != 1 {
			t.Errorf("the waiting shard mounted %d blobs, want the base", reps[1].BlobsMounted)
		}
		if c := dst.Counts(); c.Committed() != int64(len(uniqueBlobs(imgs))) {
			t.Errorf("registry committed %d blobs, %d distinct", c.Committed(), len(uniqueBlobs(imgs)))
		}
	})

	t.Run("sent when the other shard never does", func(t *testing.T) {
		dst := registrytest.Start(t)
		jobs := jobsFor(imgs, src.Host(), dst.Host())
		rep, err := Copy(ctx, testRegistry(), testRegistry(), jobs[1:], Options{Retry: mirrortest.FastRetry,
			Elsewhere: map[digest.Digest]string{shared: jobs[0].Dest}, ElsewhereWait: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if rep.BlobsSent != int64(len(imgs[1].Blobs)) {
			t.Errorf("sent %d blobs, want all %d of the image", rep.BlobsSent, len(imgs[1].Blobs))
		}
	})
}
