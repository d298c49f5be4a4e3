package transfer

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/airlock-mirror/airlock/mirror/adaptive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// minImages is how many images always run at once (when the ceiling allows):
// the fixed number the engine ran before ParallelImages became a ceiling.
const minImages = 4

// admission decides when the next image starts. ParallelImages is a ceiling:
// below minImages an image starts at once; above it, only while the bounds of
// both hosts the image touches have a spare slot (endpoint.HostLimit.Spare:
// the bound the registry client's requests share). Over a
// link where each blob costs round trips (a registry, then its CDN) an image
// holds few transfers at a time, mostly waiting for its last blob, so the
// copy needs more images in flight than a fixed four to keep the link full;
// once the hosts' limits are taken, another image would only wait for them.
//
// An image whose source reads have all begun (each blob's body is streaming,
// or the blob is done) asks the source nothing more: what is left is bytes
// already on their way and its manifest push. It leaves the running images
// then (imageSlot.finishing), so that the next image's round trips (its
// upload sessions, the registry's redirect, the CDN's answer) overlap the
// bytes of the images before it instead of following them: over a link of
// long round trips, images started together otherwise end together and the
// link idles through the next images' round trips (the release workload over
// the wan preset, 1 MiB layers, 16 images at once: 20-25 blob transfers in
// flight before, 30-40 since; benchmarks-history.md). No image
// starts while twice ParallelImages are running and finishing (a slow
// destination, or a link full of bytes, holds the copy back there); the
// transfers in flight stay bounded by the hosts' bounds, which the finishing
// images' transfers hold until their bytes are at the destination.
type admission struct {
	mu        sync.Mutex
	running   int
	finishing int
	wake      chan struct{} // closed when an image finishes or moves on to finishing
	peak      int
}

func newAdmission() *admission { return &admission{wake: make(chan struct{})} }

// admit waits until job may start (or ctx ends), then counts it as running;
// finished must be called when it ends.
func (e *copyEngine) admit(ctx context.Context, job Job) error {
	a := e.admission
	limits := []endpoint.HostLimit{e.limitOf(limitKey{endpoint.RepoHost(job.Source), false}), e.limitOf(limitKey{endpoint.RepoHost(job.Dest), true})}
	for {
		a.mu.Lock()
		n, finishing, imageDone := a.running, a.finishing, a.wake
		a.mu.Unlock()
		spare := true
		var slotFreed []<-chan struct{}
		for _, l := range limits {
			ok, ch := l.Spare()
			spare = spare && ok
			slotFreed = append(slotFreed, ch)
		}
		if n < e.opts.ParallelImages && n+finishing < 2*e.opts.ParallelImages && (n < minImages || spare) {
			a.mu.Lock()
			a.running++
			a.peak = max(a.peak, a.running)
			a.mu.Unlock()
			return nil
		}
		select {
		case <-imageDone:
		case <-slotFreed[0]:
		case <-slotFreed[1]:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// imageSlot is an admitted image's place: among the running images until
// finishing, then among the finishing ones until finished. Its methods are
// called by the image's goroutines; finishing and reads are nil-safe (a
// prefetch's images have no slot).
type imageSlot struct {
	a    *admission
	once sync.Once
	done bool // moved to the finishing images (guarded by a.mu)
}

func (a *admission) slot() *imageSlot { return &imageSlot{a: a} }

// finishing moves the image from the running images to the finishing ones
// (once).
func (s *imageSlot) finishing() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		a := s.a
		a.mu.Lock()
		defer a.mu.Unlock()
		s.done = true
		a.running--
		a.finishing++
		a.wakeAll()
	})
}

// readsLeft counts an image's blobs whose source reads have not begun: when
// the last one begins, done is called (the image is finishing).
type readsLeft struct {
	n    atomic.Int64
	done func()
}

// newReadsLeft returns the counter of n blob reads, nil (its begun does
// nothing) when n is 0 or done nil.
func newReadsLeft(n int, done func()) *readsLeft {
	if n == 0 || done == nil {
		return nil
	}
	r := &readsLeft{done: done}
	r.n.Store(int64(n))
	return r
}

// begun returns what to call when one blob's read has begun: its body
// streams from the source, or the blob needs no read (held, mounted, sent
// by another image, failed). It counts the blob once however often it is
// called (a retried read opens again).
func (r *readsLeft) begun() func() {
	if r == nil {
		return func() {}
	}
	return sync.OnceFunc(func() {
		if r.n.Add(-1) == 0 {
			r.done()
		}
	})
}

// finished ends the image.
func (s *imageSlot) finished() {
	a := s.a
	s.once.Do(func() {}) // a later finishing does nothing
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.done {
		a.finishing--
	} else {
		a.running--
	}
	a.wakeAll()
}

// wakeAll wakes the images waiting in admit; a.mu is held.
func (a *admission) wakeAll() {
	close(a.wake)
	a.wake = make(chan struct{})
}

// DefaultParallelImages is Options.ParallelImages' default (and
// --parallel-images'): the most images copied at once. It is a ceiling the
// hosts' adaptive bounds keep the copy under (see admission). A ceiling of 64
// was tried for images of small layers over a link of long round trips (each
// blob two round trips for little of the link): measured quiet it did not
// shorten the release workload over a 50 ms, 50 MB/s link (5.40 s at 16 and
// at 64) and raised the catalog workload's peak RSS from 242 to 332 MiB
// (benchmarks-history.md): more images at once is not what keeps that link
// idle, so the default stays 16.
const DefaultParallelImages = 16

// DefaultParallelLayers is Options.ParallelLayers' default (and
// --parallel-layers'): the most blobs of one image transferred at once.
const DefaultParallelLayers = 5

// DefaultMaxPerRegistry is Options.MaxPerRegistry's default when
// ParallelImages and ParallelLayers are the defaults (else their product):
// the ceiling of a host's bound on the work touching it, which the ceiling
// of images at once does not raise.
const DefaultMaxPerRegistry = 80

// newTransferLimit is a bound the engine keeps itself, for a host of an
// endpoint without bounds of its own: an archive or a layout on the local
// disk, where nothing answers 429 or queues like a link. It starts at its
// ceiling (it started at 10 and grew one transfer at a time while transfers
// waited for it, so that mirror-to-disk ran fewer transfers at once than
// mirror-to-mirror over the same link); the source host's bound is what
// adapts.
func newTransferLimit(ceiling int) *adaptive.Limit {
	return adaptive.NewFrom(ceiling, ceiling)
}

// logLimits writes what the hosts' bounds did so far (debug level).
func (e *copyEngine) logLimits() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, l := range e.hostLimits {
		if sl, ok := l.(interface{ Stats() adaptive.Stats }); ok {
			st := sl.Stats()
			e.log.Debug("bound per host", "host", k.host, "destination", k.dst, "limit", st.Limit, "ceiling", st.Ceiling, "peak", st.Peak, "grew", st.Grows, "cut", st.Cuts)
		}
	}
	e.admission.mu.Lock()
	defer e.admission.mu.Unlock()
	e.log.Debug("images at once", "peak", e.admission.peak, "ceiling", e.opts.ParallelImages)
}
