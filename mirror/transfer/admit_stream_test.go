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
)

// heldBodies is a source whose blob reads answer at once and whose bodies
// send nothing until release is closed (or a deadline passes): a link whose
// bytes are still on their way. It counts the reads opened.
type heldBodies struct {
	endpoint.Source
	release  chan struct{}
	deadline time.Duration

	mu      sync.Mutex
	opened  int
	want    int
	reached chan struct{} // closed when the want-th read opens
}

func newHeldBodies(src endpoint.Source, want int) *heldBodies {
	return &heldBodies{Source: src, release: make(chan struct{}), deadline: 10 * time.Second, want: want, reached: make(chan struct{})}
}

func (s *heldBodies) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	rc, err := s.Source.Blob(ctx, repo, d)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.opened++
	if s.opened == s.want {
		close(s.reached)
	}
	s.mu.Unlock()
	return &heldBody{ReadCloser: rc, s: s, ctx: ctx}, nil
}

// reads returns the reads opened so far.
func (s *heldBodies) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened
}

type heldBody struct {
	io.ReadCloser
	s    *heldBodies
	ctx  context.Context
	once sync.Once
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.once.Do(func() {
		t := time.NewTimer(b.s.deadline)
		defer t.Stop()
		select {
		case <-b.s.release:
		case <-t.C:
		case <-b.ctx.Done():
		}
	})
	return b.ReadCloser.Read(p)
}

// waitReads waits until src opened its want-th read (true), or its deadline
// passed while every body was held (false).
func waitReads(src *heldBodies) bool {
	select {
	case <-src.reached:
		return true
	case <-time.After(src.deadline):
		return false
	}
}

// TestImagesStartWhileOthersStream: an image whose blob reads have all begun
// (their bodies on the way) leaves the running images, so the next images
// make their requests while those bytes arrive: with 4 images at once and
// every body held, the reads of 8 images open (4 images streaming, 4 running),
// where those of 4 did before (the images waited for their bodies); and no
// more than 8, twice the images at once.
func TestImagesStartWhileOthersStream(t *testing.T) {
	srcReg, dstReg := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, srcReg.Host(), 12, 2, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(7100 + i), Layers: 1, LayerSize: 512}
	})
	const parallel = 4
	want := 2 * 2 * parallel // a config and a layer of each of 8 images
	src := newHeldBodies(testRegistry(), want)
	jobs := jobsFor(imgs, srcReg.Host(), dstReg.Host())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Copy(ctx, src, testRegistry(), jobs, Options{Retry: mirrortest.FastRetry, ParallelImages: parallel, ParallelLayers: DefaultParallelLayers})
		done <- result{rep, err}
	}()
	reached := waitReads(src)
	time.Sleep(100 * time.Millisecond) // time for reads beyond the bound to open, were there any
	opened := src.reads()
	close(src.release)
	r := <-done
	if r.err != nil {
		t.Fatalf("copy: %v", r.err)
	}
	if !reached {
		t.Fatalf("%d blob reads opened while the first bodies were held, want %d: the images streaming held their places", opened, want)
	}
	if opened != want {
		t.Errorf("%d blob reads opened while the bodies were held, want %d (twice the images at once, a config and a layer each)", opened, want)
	}
	checkDest(t, jobs)
	if r.rep.BlobsSent != int64(2*len(imgs)) {
		t.Errorf("%d blobs sent, want %d", r.rep.BlobsSent, 2*len(imgs))
	}
}

// TestPrefetchStartsWhileOthersStream: a prefetch's worker whose image's blob
// reads have all begun lets another worker start the next image, as Copy
// does: with ParallelImages 3 and every body held, the reads of 6 images open,
// no more.
func TestPrefetchStartsWhileOthersStream(t *testing.T) {
	srcReg, dstReg := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, srcReg.Host(), 12, 3, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(7200 + i), Layers: 1, LayerSize: 512}
	})
	const parallel = 3
	want := 2 * 2 * parallel
	src := newHeldBodies(testRegistry(), want)
	jobs := jobsFor(imgs, srcReg.Host(), dstReg.Host())
	p := NewPrefetch(context.Background(), src, testRegistry(), Options{Retry: mirrortest.FastRetry, ParallelImages: parallel})
	p.Expect(jobs)
	for _, j := range jobs {
		p.Add(j)
	}
	reached := waitReads(src)
	time.Sleep(100 * time.Millisecond)
	opened := src.reads()
	close(src.release)
	p.wg.Wait()
	p.Stop()
	if !reached {
		t.Fatalf("%d blob reads opened while the first bodies were held, want %d: the workers waited for their images' bodies", opened, want)
	}
	if opened != want {
		t.Errorf("%d blob reads opened while the bodies were held, want %d (twice ParallelImages images, a config and a layer each)", opened, want)
	}
	if c := dstReg.Counts(); c.Committed() != int64(len(uniqueBlobs(imgs))) {
		t.Errorf("%d blobs committed, want %d", c.Committed(), len(uniqueBlobs(imgs)))
	}
}
