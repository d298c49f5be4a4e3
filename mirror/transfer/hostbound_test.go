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
	"github.com/airlock-mirror/airlock/mirror/adaptive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// watchedSource counts the blob reads open at once and says whether any was
// made outside a slot of its host's bound (endpoint.InSlot).
type watchedSource struct {
	*registry.Client
	mu             sync.Mutex
	open, peak     int
	reads, outside int
}

func (s *watchedSource) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	s.mu.Lock()
	s.reads++
	if !endpoint.HasSlot(ctx) {
		s.outside++
	}
	s.open++
	s.peak = max(s.peak, s.open)
	s.mu.Unlock()
	rc, err := s.Client.Blob(ctx, repo, d)
	if err != nil {
		s.closed()
		return nil, err
	}
	return &closeOnce{ReadCloser: rc, done: s.closed}, nil
}

func (s *watchedSource) closed() {
	s.mu.Lock()
	s.open--
	s.mu.Unlock()
}

type closeOnce struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (c *closeOnce) Close() error {
	c.once.Do(c.done)
	return c.ReadCloser.Close()
}

// TestCopyUnderTheClientsBound: the engine runs its blob transfers under the
// registry clients' own bounds on their hosts (one bound per host, not one of
// the engine's stacked on the client's): with every bound at its floor, no
// more blobs are read at once than the source host's bound allows, every
// read is made in a slot (its requests take no other), and the copy of many
// images, each with several blobs at once, never deadlocks.
func TestCopyUnderTheClientsBound(t *testing.T) {
	srcReg := registrytest.Start(t)
	dstReg := registrytest.Start(t)
	imgs := pushImages(t, srcReg.Host(), 12, 4, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(300 + i), BaseSeed: uint64(i % 3), BaseLayers: 2, Layers: 3, LayerSize: 4096}
	})
	jobs := jobsFor(imgs, srcReg.Host(), dstReg.Host())
	src := &watchedSource{Client: registry.New(registry.Options{Retry: mirrortest.FastRetry, MaxPerHost: adaptive.Floor})}
	dst := registry.New(registry.Options{Retry: mirrortest.FastRetry, MaxPerHost: adaptive.Floor})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Copy(ctx, src, dst, jobs, Options{ParallelImages: 8, ParallelLayers: 5, MaxPerRegistry: adaptive.Floor, Retry: mirrortest.FastRetry}); err != nil {
		t.Fatalf("copy: %v", err)
	}
	checkDest(t, jobs)
	if src.reads == 0 || src.outside != 0 || src.peak > adaptive.Floor {
		t.Fatalf("%d blob reads, %d outside a slot, at most %d at once: want all in slots, at most %d at once", src.reads, src.outside, src.peak, adaptive.Floor)
	}
	for name, c := range map[string]*registry.Client{"source": src.Client, "destination": dst} {
		for host, st := range c.LimitStats() {
			if st.Ceiling != adaptive.Floor || st.Peak > adaptive.Floor || st.InUse != 0 {
				t.Errorf("%s bound of %s: %+v", name, host, st)
			}
		}
	}
}

// TestLimitOf: the engine takes each side's bound of a host from that side's
// endpoint when it keeps one (the registry client's, its ceiling raised to
// MaxPerRegistry), and keeps one of its own per host otherwise, which starts
// at its ceiling.
func TestLimitOf(t *testing.T) {
	src := registry.New(registry.Options{MaxPerHost: 8})
	dst := registry.New(registry.Options{MaxPerHost: 8})
	e := newCopyEngine(&MemoSource{Source: src}, dst, Options{MaxPerRegistry: 40})
	for _, k := range []limitKey{{"quay.io", false}, {"mirror.example", true}} {
		c := src
		if k.dst {
			c = dst
		}
		if l := e.limitOf(k); l != c.HostLimit(k.host) || l.(*adaptive.Limit).Stats().Ceiling != 40 {
			t.Fatalf("%+v: %v, want the client's bound with the ceiling raised to 40", k, l)
		}
	}
	if len(e.ownLimits) != 0 {
		t.Fatalf("the engine made bounds of its own: %v", e.ownLimits)
	}
	archive := newCopyEngine(src, struct{ endpoint.Destination }{}, Options{MaxPerRegistry: 40})
	if l := archive.limitOf(limitKey{"mirror.example", true}); l != archive.ownLimits["mirror.example"] || l == nil {
		t.Fatalf("a destination without bounds: %v, want the engine's own", l)
	} else if st := l.(*adaptive.Limit).Stats(); st.Limit != 40 {
		// A local archive or layout has no link to adapt to: the source
		// host's bound is what adapts, this one does not hold it back.
		t.Fatalf("the engine's own bound starts at %d, want its ceiling 40", st.Limit)
	}
	if e := newCopyEngine(src, dst, Options{}); e.opts.MaxPerRegistry != DefaultMaxPerRegistry || e.opts.ParallelImages != DefaultParallelImages {
		t.Fatalf("defaults: %d images at once, %d per registry; want %d and %d", e.opts.ParallelImages, e.opts.MaxPerRegistry, DefaultParallelImages, DefaultMaxPerRegistry)
	}
	if e := newCopyEngine(src, dst, Options{ParallelImages: 8, ParallelLayers: 3}); e.opts.MaxPerRegistry != 24 {
		t.Fatalf("8 images of 3 layers: %d per registry, want 24", e.opts.MaxPerRegistry)
	}
}
