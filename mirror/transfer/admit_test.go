package transfer

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// countedReads is a source that counts its blob reads and closes reached when
// the want-th starts.
type countedReads struct {
	endpoint.Source
	want int

	mu      sync.Mutex
	reads   int
	reached chan struct{}
}

func (s *countedReads) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	s.mu.Lock()
	s.reads++
	if s.reads == s.want {
		close(s.reached)
	}
	s.mu.Unlock()
	return s.Source.Blob(ctx, repo, d)
}

// slowPushes is a destination whose manifest pushes do not answer until
// release is closed (or a deadline passes): a destination far away, or busy.
type slowPushes struct {
	endpoint.Destination
	release  <-chan struct{}
	deadline time.Duration
	timedOut *atomic.Int64 // pushes let go by the deadline
}

func (d slowPushes) PutManifest(ctx context.Context, repo, reference string, m endpoint.Manifest) error {
	t := time.NewTimer(d.deadline)
	defer t.Stop()
	select {
	case <-d.release:
	case <-t.C:
		d.timedOut.Add(1)
	case <-ctx.Done():
	}
	return d.Destination.PutManifest(ctx, repo, reference, m)
}

// TestImagesReadWhileOthersPush: an image whose blobs are all at the
// destination leaves the images at once to push its manifest, so the next
// images read from the source meanwhile: with 4 images at once and every
// manifest push held, the blobs of 8 images are read (4 images pushing, 4
// reading), where they were of 4 before (the images waited in their pushes).
func TestImagesReadWhileOthersPush(t *testing.T) {
	srcReg := registrytest.Start(t)
	dstReg := registrytest.Start(t)
	imgs := pushImages(t, srcReg.Host(), 12, 2, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(7000 + i), Layers: 1, LayerSize: 512}
	})
	const parallel = 4
	want := 2 * 2 * parallel // a config and a layer of each of 8 images
	reached := make(chan struct{})
	src := &countedReads{Source: registry.New(registry.Options{Retry: mirrortest.FastRetry}), want: want, reached: reached}
	dst := slowPushes{Destination: registry.New(registry.Options{Retry: mirrortest.FastRetry}), release: reached, deadline: 10 * time.Second, timedOut: &atomic.Int64{}}
	jobs := jobsFor(imgs, srcReg.Host(), dstReg.Host())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := Copy(ctx, src, dst, jobs, Options{Retry: mirrortest.FastRetry, ParallelImages: parallel, ParallelLayers: DefaultParallelLayers})
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	checkDest(t, jobs)
	if rep.BlobsSent != int64(2*len(imgs)) {
		t.Errorf("%d blobs sent, want %d", rep.BlobsSent, 2*len(imgs))
	}
	if n := dst.timedOut.Load(); n > 0 {
		t.Fatalf("%d pushes waited out the deadline: fewer than %d blob reads while the first pushes waited (the images pushing held their places; %v)", n, want, time.Since(start))
	}
}
