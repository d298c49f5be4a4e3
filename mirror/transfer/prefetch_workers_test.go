package transfer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// slowSource reads manifests from a real registry, each after a pause,
// counting the reads under way at once and the references read.
type slowSource struct {
	endpoint.Source
	pause time.Duration

	mu            sync.Mutex
	now, most     int
	read          map[string]int
	afterStopping int
	stopped       bool
}

func (s *slowSource) Manifest(ctx context.Context, repo, ref string) (endpoint.Manifest, error) {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.read[repo+"@"+ref]++
	if s.stopped {
		s.afterStopping++
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	select {
	case <-time.After(s.pause):
	case <-ctx.Done():
		return endpoint.Manifest{}, ctx.Err()
	}
	return s.Source.Manifest(ctx, repo, ref)
}

// A prefetch given many images reads at most ParallelImages of them at once,
// reads every one of them once, and reads none once stopped.
func TestPrefetchReadsParallelImagesAtOnce(t *testing.T) {
	src, dst := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 12, 3, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(700 + i), Layers: 1, LayerSize: 1 << 10}
	})
	jobs := jobsFor(imgs, src.Host(), dst.Host())
	slow := &slowSource{Source: testRegistry(), pause: 5 * time.Millisecond, read: map[string]int{}}
	p := NewPrefetch(context.Background(), slow, testRegistry(), Options{ParallelImages: 3})
	p.Expect(jobs)
	for _, j := range jobs {
		p.Add(j)
	}
	p.wg.Wait()
	if slow.most > 3 || slow.most < 2 {
		t.Errorf("%d images read at once, want 2 or 3 (ParallelImages 3)", slow.most)
	}
	for _, j := range jobs {
		if n := slow.read[j.Source+"@"+j.Digest.String()]; n != 1 {
			t.Errorf("%s@%s read %d times, want once", j.Source, j.Digest, n)
		}
	}
	if c := dst.Counts(); c.Committed() != int64(len(uniqueBlobs(imgs))) {
		t.Errorf("%d blobs committed, want %d", c.Committed(), len(uniqueBlobs(imgs)))
	}

	// Stopped with images waiting: those are left to Copy.
	slow2 := &slowSource{Source: testRegistry(), pause: time.Hour, read: map[string]int{}}
	p2 := NewPrefetch(context.Background(), slow2, testRegistry(), Options{ParallelImages: 1})
	for _, j := range jobs {
		p2.Add(j)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		slow2.mu.Lock()
		n := slow2.now
		slow2.mu.Unlock()
		if n == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	slow2.mu.Lock()
	slow2.stopped = true
	slow2.mu.Unlock()
	p2.Stop()
	if slow2.afterStopping != 0 || len(slow2.read) != 1 {
		t.Errorf("stopped prefetch read %d manifests after Stop, %d in all; want none after, one in all", slow2.afterStopping, len(slow2.read))
	}
}
