package transfer

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// slowLink is a source whose blob reads do not start answering until want of
// them are open at once (or a deadline passes): a link of long round trips,
// where what keeps it busy is how many reads the engine has open. It keeps no
// bounds of its own (no endpoint.HostLimiter), so the engine's scheduling is
// what is measured, not a bound's growth.
type slowLink struct {
	endpoint.Source
	want     int
	deadline time.Duration

	mu         sync.Mutex
	open, peak int
	reached    chan struct{}
}

func (s *slowLink) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	s.mu.Lock()
	s.open++
	s.peak = max(s.peak, s.open)
	if s.open >= s.want && s.reached != nil {
		close(s.reached)
		s.reached = nil
	}
	reached := s.reached
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.open--
		s.mu.Unlock()
	}()
	if reached != nil {
		t := time.NewTimer(s.deadline)
		select {
		case <-reached:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return s.Source.Blob(ctx, repo, d)
}

// TestCopyOpensManyBlobReadsAtOnce: given a ceiling of 64 images at once
// (--parallel-images 64), the engine keeps more blob reads open at once than
// 16 images could (images of one layer: a config and a layer each, 32), so
// that over a link of long round trips, where each read holds little of the
// link, enough of them can be in flight; it is the hosts' adaptive bounds that
// keep the copy under what a host takes, not a fixed number of images.
func TestCopyOpensManyBlobReadsAtOnce(t *testing.T) {
	srcReg := registrytest.Start(t)
	dstReg := registrytest.Start(t)
	imgs := pushImages(t, srcReg.Host(), 72, 4, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(5000 + i), Layers: 1, LayerSize: 1024}
	})
	const old, want = 16 * 2, 48
	src := &slowLink{Source: registry.New(registry.Options{Retry: mirrortest.FastRetry}), want: want, deadline: 20 * time.Second, reached: make(chan struct{})}
	dst := struct{ endpoint.Destination }{registry.New(registry.Options{Retry: mirrortest.FastRetry})}
	jobs := jobsFor(imgs, srcReg.Host(), dstReg.Host())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := newCopyEngine(src, dst, Options{Retry: mirrortest.FastRetry, ParallelImages: 64, ParallelLayers: DefaultParallelLayers})
	rep, err := copyWith(ctx, e, jobs, e.opts)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	checkDest(t, jobs)
	if rep.BlobsSent != int64(2*len(imgs)) {
		t.Errorf("%d blobs sent, want %d", rep.BlobsSent, 2*len(imgs))
	}
	if src.peak < want {
		t.Errorf("at most %d blob reads open at once (%d images at once): want %d, more than the %d of 16 images", src.peak, e.admission.peak, want, old)
	}
}
