package transfer

import (
	"context"
	"sync"

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
// An image whose reads are done (its blobs are at the destination) only
// pushes its manifest and tags: it leaves the running images then
// (imageSlot.pushing), so that the next image reads while it pushes; no
// image starts while twice ParallelImages are running and pushing (a slow
// destination holds the copy back there).
type admission struct {
	mu      sync.Mutex
	running int
	pushing int
	wake    chan struct{} // closed when an image finishes or moves on to its push
	peak    int
}

func newAdmission() *admission { return &admission{wake: make(chan struct{})} }

// admit waits until job may start (or ctx ends), then counts it as running;
// finished must be called when it ends.
func (e *copyEngine) admit(ctx context.Context, job Job) error {
	a := e.admission
	limits := []endpoint.HostLimit{e.limitOf(limitKey{endpoint.RepoHost(job.Source), false}), e.limitOf(limitKey{endpoint.RepoHost(job.Dest), true})}
	for {
		a.mu.Lock()
		n, pushing, imageDone := a.running, a.pushing, a.wake
		a.mu.Unlock()
		spare := true
		var slotFreed []<-chan struct{}
		for _, l := range limits {
			ok, ch := l.Spare()
			spare = spare && ok
			slotFreed = append(slotFreed, ch)
		}
		if n < e.opts.ParallelImages && n+pushing < 2*e.opts.ParallelImages && (n < minImages || spare) {
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
// pushing, then among the pushing ones until finished. Its methods are called
// by the image's goroutines; pushing is nil-safe (a prefetch's images have no
// slot).
type imageSlot struct {
	a    *admission
	once sync.Once
	push bool // moved to the pushing images (guarded by a.mu)
}

func (a *admission) slot() *imageSlot { return &imageSlot{a: a} }

// pushing moves the image from the running images to the pushing ones (once).
func (s *imageSlot) pushing() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		a := s.a
		a.mu.Lock()
		defer a.mu.Unlock()
		s.push = true
		a.running--
		a.pushing++
		a.wakeAll()
	})
}

// finished ends the image.
func (s *imageSlot) finished() {
	a := s.a
	s.once.Do(func() {}) // a later pushing does nothing
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.push {
		a.pushing--
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
