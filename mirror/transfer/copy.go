package transfer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/airlock-mirror/airlock/mirror/adaptive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// ErrFailed is returned (wrapped) by Copy when at least one image failed; the
// report says which and why.
var ErrFailed = errors.New("some images were not copied")

// Copy copies every job's manifest (with its children, configs and layers) from
// src to dst. Guarantees:
//   - each blob digest is transferred at most once per run, never twice at once;
//     later repositories of the same destination get it by cross-repository mount
//     (upload only if the mount is refused);
//   - blobs and manifests already at the destination are not sent again;
//   - when source and destination repositories are on the same host, blobs are
//     mounted from the source repository;
//   - every byte is verified against its digest before it is committed;
//   - a manifest is pushed only after all its blobs and children, tags last;
//   - one image's failure does not stop the others; the report says what failed;
//   - cancelling ctx stops promptly; running again copies only what is missing.
//
// Foreign (non-distributable) layers with URLs are not copied. The returned error
// wraps ErrFailed when an image failed, or is ctx's error when cancelled; the
// report is always returned.
func Copy(ctx context.Context, src endpoint.Source, dst endpoint.Destination, jobs []Job, opts Options) (*Report, error) {
	return copyWith(ctx, newCopyEngine(src, dst, opts), jobs, opts)
}

// copyWith is Copy with engine e (a new one, or a Prefetch's).
func copyWith(ctx context.Context, e *copyEngine, jobs []Job, opts Options) (*Report, error) {
	start := time.Now()
	e.begin(jobs, opts.Held)
	report := &Report{Images: make([]ImageResult, len(jobs))}
	// A registry found unreachable stops the run: the images not started yet are
	// not tried one by one against it.
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var g errgroup.Group
	// An admitted image goes to a worker waiting for one, or to a new
	// worker: the workers are about as many as the images copied at once,
	// not one goroutine per image (a re-run of 20,000 held images paid a
	// goroutine and its stack growth each).
	type admitted struct {
		res  *ImageResult
		slot *imageSlot
	}
	work := make(chan admitted)
	copyOne := func(a admitted) {
		defer a.slot.finished()
		if err := e.copyImage(rctx, a.res, a.slot); errors.Is(err, endpoint.ErrRegistryUnreachable) {
			stop(err)
		}
		e.imageDone(a.res)
	}
	for i, job := range jobs {
		report.Images[i] = ImageResult{Job: job}
		res := &report.Images[i]
		if rctx.Err() == nil {
			_ = e.admit(rctx, job) // at most ParallelImages at once (see admission)
		}
		if rctx.Err() != nil {
			res.Status, res.Err = StatusFailed, "not started: "+context.Cause(rctx).Error()
			continue
		}
		next := admitted{res, e.admission.slot()}
		select {
		case work <- next:
		default:
			g.Go(func() error {
				copyOne(next)
				for a := range work {
					copyOne(a)
				}
				return nil
			})
		}
	}
	close(work)
	_ = g.Wait()
	e.logLimits()
	report.BlobsSent = e.blobsSent.Load()
	report.BlobsMounted = e.blobsMounted.Load()
	report.BlobsSkipped = e.blobsSkipped.Load()
	report.BytesSent = e.bytesSent.Load()
	report.BytesResumed = e.bytesResumed.Load()
	report.ManifestsSent = e.manifestsSent.Load()
	report.Duration = time.Since(start)
	if err := ctx.Err(); err != nil {
		return report, err
	}
	if cause := context.Cause(rctx); errors.Is(cause, endpoint.ErrRegistryUnreachable) {
		return report, fmt.Errorf("%d of %d images not copied: %w", len(report.Failed()), len(jobs), cause)
	}
	if n := len(report.Failed()); n > 0 {
		return report, fmt.Errorf("%d of %d images failed (first: %s: %s): %w", n, len(jobs), report.Failed()[0].Job.Source, report.Failed()[0].Err, ErrFailed)
	}
	return report, nil
}

type copyEngine struct {
	src    endpoint.Source
	dst    endpoint.Destination
	opts   Options
	policy retry.Policy
	log    *slog.Logger

	mu         sync.Mutex
	blobs      map[string]*copyFlight          // dest repo + digest → "present in that repo"
	manifests  map[string]*copyFlight          // dest repo + digest → manifest (and children) present
	asks       map[string]*copyFlight          // job key → the destination asked about it (askPresence)
	digestMu   map[digest.Digest]chan struct{} // one byte transfer per digest at a time
	present    map[digest.Digest][]string      // dest repos known to hold the digest
	hostLimits map[limitKey]endpoint.HostLimit // the bounds of the hosts on each side (limitOf)
	ownLimits  map[string]*adaptive.Limit      // by host: those the engine keeps
	admission  *admission

	// Manifests the destination already holds are not read unless a new blob
	// has no repository to be mounted from (see destHolds, discoverPresent).
	walkMu    sync.Mutex               // one discovery at a time
	holds     map[repoDigest]bool      // destination holds this manifest (asked once)
	heldSeen  bool                     // some answer in holds was "held" (foundEmpty)
	tagged    map[string]digest.Digest // "repo:tag" → the digest the destination was found to tag so
	presence  presence                 // how the destination is asked about an image
	toWalk    map[string][]repoDigest  // by host: held manifests not read yet
	walked    map[repoDigest]bool      // manifests read for discovery
	jobs      []Job                    // every image of the run
	jobCursor int                      // jobs[:jobCursor] were looked at by discovery

	blobsSent, blobsMounted, blobsSkipped, bytesSent, bytesResumed, manifestsSent atomic.Int64

	progMu                              sync.Mutex
	imagesTotal, imagesDone, imagesFail int
	bytesDone, bytesTotal               int64
	seenTotal, seenDone                 map[digest.Digest]bool
	early                               *prefetched           // set on a Prefetch's engine
	doneBlobs                           []endpoint.Descriptor // with early: blobs done, for Copy's progress
}

func newCopyEngine(src endpoint.Source, dst endpoint.Destination, opts Options) *copyEngine {
	if opts.ParallelImages <= 0 {
		opts.ParallelImages = DefaultParallelImages
	}
	if opts.ParallelLayers <= 0 {
		opts.ParallelLayers = DefaultParallelLayers
	}
	if opts.MaxPerRegistry <= 0 {
		opts.MaxPerRegistry = opts.ParallelImages * opts.ParallelLayers
		if opts.ParallelImages == DefaultParallelImages && opts.ParallelLayers == DefaultParallelLayers {
			opts.MaxPerRegistry = DefaultMaxPerRegistry
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &copyEngine{
		src: src, dst: dst, opts: opts, policy: retry.OrDefault(opts.Retry), log: log, presence: presence{lists: newTagListings(dst, opts.Recorded)},
		blobs: map[string]*copyFlight{}, manifests: map[string]*copyFlight{}, asks: map[string]*copyFlight{},
		digestMu: map[digest.Digest]chan struct{}{}, present: map[digest.Digest][]string{},
		hostLimits: map[limitKey]endpoint.HostLimit{}, ownLimits: map[string]*adaptive.Limit{}, admission: newAdmission(), seenTotal: map[digest.Digest]bool{}, seenDone: map[digest.Digest]bool{},
		walked: map[repoDigest]bool{}, holds: map[repoDigest]bool{}, toWalk: map[string][]repoDigest{}, tagged: map[string]digest.Digest{},
	}
}

type repoDigest struct {
	repo string
	d    digest.Digest
}

func (e *copyEngine) imageDone(res *ImageResult) {
	e.progMu.Lock()
	defer e.progMu.Unlock()
	e.imagesDone++
	if res.Status == StatusFailed {
		e.imagesFail++
		reason := res.Hint
		if reason == "" {
			reason = res.Err
		}
		e.log.Warn("image copy failed", "source", res.Job.Source+"@"+res.Job.Digest.String(), "dest", res.Job.Dest, "reason", reason, DetailKey, res.Err)
	}
	if e.opts.Progress != nil {
		r := *res
		e.opts.Progress(ProgressEvent{ImagesDone: e.imagesDone, ImagesTotal: e.imagesTotal, ImagesFailed: e.imagesFail,
			BytesDone: e.bytesDone, BytesTotal: e.bytesTotal, Image: &r})
	}
}

func (e *copyEngine) addTotal(blobs []endpoint.Descriptor) {
	e.progMu.Lock()
	defer e.progMu.Unlock()
	for _, b := range blobs {
		if !e.seenTotal[b.Digest] {
			e.seenTotal[b.Digest] = true
			e.bytesTotal += b.Size
		}
	}
}

func (e *copyEngine) blobDone(d endpoint.Descriptor) {
	e.progMu.Lock()
	defer e.progMu.Unlock()
	if e.seenDone[d.Digest] {
		return
	}
	e.seenDone[d.Digest] = true
	if e.early != nil {
		e.doneBlobs = append(e.doneBlobs, d)
	}
	e.bytesDone += d.Size
	if e.opts.Progress != nil {
		e.opts.Progress(ProgressEvent{ImagesDone: e.imagesDone, ImagesTotal: e.imagesTotal, ImagesFailed: e.imagesFail,
			BytesDone: e.bytesDone, BytesTotal: e.bytesTotal, Blob: &d})
	}
}

// imageCtx carries per-image accounting.
type imageCtx struct {
	job  Job
	slot *imageSlot // its place among the images at once (nil: a Prefetch's)
	// begun, on a Prefetch's image, is called once every read of its own
	// blobs has begun (see Prefetch.work).
	begun func()
	early bool // a Prefetch's: its flights' failures are provisional
	sent  atomic.Bool
	bytes atomic.Int64
}

func (e *copyEngine) copyImage(ctx context.Context, res *ImageResult, slot *imageSlot) error {
	job := res.Job
	ic := &imageCtx{job: job, slot: slot}
	jctx := ctx
	if d := e.opts.ImageTimeout; d > 0 {
		var cancel context.CancelFunc
		jctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	err := e.copyJob(jctx, ic)
	res.BytesSent = ic.bytes.Load()
	switch {
	case err != nil && ctx.Err() != nil && context.Cause(ctx) != ctx.Err():
		res.Status, res.Err = StatusFailed, "not finished: "+context.Cause(ctx).Error()
	case err != nil && jctx.Err() != nil && ctx.Err() == nil:
		err = fmt.Errorf("not copied within %s (--image-timeout): %w", e.opts.ImageTimeout, err)
		res.Status, res.Err = StatusFailed, err.Error()
	case err != nil:
		res.Status, res.Err = StatusFailed, err.Error()
	case ic.sent.Load():
		res.Status = StatusCopied
	default:
		res.Status = StatusSkipped
	}
	if err != nil {
		res.Class, res.Hint = Classify(err)
	}
	return err
}

func (e *copyEngine) copyJob(ctx context.Context, ic *imageCtx) error {
	job := ic.job
	if err := job.Digest.Validate(); err != nil {
		return fmt.Errorf("image %s: bad digest %q: %w", job.Source, job.Digest, err)
	}
	if job.Source == "" || job.Dest == "" {
		return fmt.Errorf("image %s@%s: source and destination repositories are required", job.Source, job.Digest)
	}
	// The top manifest is pushed under its first tag (by digest when it has
	// none), its other tags after it. The destination verifies every push
	// (registry.Client.PutManifest: the digest the registry reports for a tag
	// must be the manifest's, an altered revision is deleted and pushed
	// again), so an altered body is never reported
	// as copied nor left behind. Children of an index are pushed by digest.
	first := ""
	if len(job.Tags) > 0 {
		first = job.Tags[0]
	}
	if err := e.askPresence(ctx, job); err != nil {
		return err
	}
	m, tagged, err := e.copyManifest(ctx, ic, job.Digest, "", first, len(job.Platforms) > 0)
	if err != nil {
		return err
	}
	// A manifest this run just pushed has no tags worth checking; first is
	// done unless the registry refused it (then it is tried again below, and
	// its refusal is this job's error).
	fresh := m != nil
	for _, tag := range job.Tags {
		if fresh && tagged && tag == first {
			continue
		}
		if !fresh {
			if e.taggedSo(job.Dest, tag, job.Digest) {
				continue
			}
			ok, err := e.dst.ManifestExists(ctx, job.Dest, tag, job.Digest)
			if err != nil {
				return fmt.Errorf("tag %s:%s: %w", job.Dest, tag, err)
			}
			if ok {
				continue
			}
		}
		if m == nil {
			mm, err := e.readManifest(ctx, job, job.Digest, true)
			if err != nil {
				return err
			}
			if mm.Digest != job.Digest {
				return fmt.Errorf("manifest %s@%s: source returned %s: %w", job.Source, job.Digest, mm.Digest, oci.ErrDigestMismatch)
			}
			m = &mm
		}
		if err := e.dst.PutManifest(ctx, job.Dest, tag, *m); err != nil {
			return fmt.Errorf("tag %s:%s: %w", job.Dest, tag, err)
		}
		e.manifestsSent.Add(1)
		ic.sent.Store(true)
	}
	return nil
}

// copyManifest makes sure manifest d (and everything it references) is in the
// job's destination repository, pushed under tag (by digest when tag is empty).
// It returns the manifest when it had to push it, and whether it went in under
// tag: a tag the registry refuses for good (a 4xx: an immutable tag, a tag
// policy) does not keep the manifest out, it is pushed by digest for the other
// jobs and indexes that share it.
//
// With a platform subset (Job.Platforms), an index the destination holds is
// still read when recheck is set (the job's own manifest, and children that are
// indexes): a sparse index pushed by an earlier run with fewer platforms lacks
// children this subset wants, and they are copied.
func (e *copyEngine) copyManifest(ctx context.Context, ic *imageCtx, d digest.Digest, parent, tag string, recheck bool) (*endpoint.Manifest, bool, error) {
	job := ic.job
	var got *endpoint.Manifest
	tagged := tag != ""
	_, _, err := e.flight(ctx, e.manifests, job.Dest+"@"+d.String(), false, func() (bool, error) {
		held, err := e.destHolds(ctx, repoDigest{job.Dest, d})
		if err != nil {
			return false, err
		}
		if held && !recheck {
			return false, nil
		}
		m, err := e.readManifest(ctx, job, d, held)
		if err != nil {
			return false, err
		}
		if m.Digest == "" {
			m.Digest = digest.FromBytes(m.Raw)
		}
		if m.Digest != d || digest.FromBytes(m.Raw) != d {
			return false, fmt.Errorf("manifest %s@%s: content has digest %s: %w", job.Source, d, digest.FromBytes(m.Raw), oci.ErrDigestMismatch)
		}
		refs, err := oci.Parse(m)
		if err != nil {
			return false, fmt.Errorf("manifest %s@%s%s: %w", job.Source, d, parent, err)
		}
		children, err := subset(job, d, refs.Manifests)
		if err != nil {
			return false, err
		}
		if held {
			return false, e.forEach(ctx, len(children), func(i int) error {
				_, _, err := e.copyManifest(ctx, ic, children[i].Digest, " (child of "+d.String()+")", "", oci.IsIndex(children[i].MediaType))
				return err
			})
		}
		e.addTotal(refs.Blobs)
		// Children first (index), then blobs, each bounded by ParallelLayers.
		if err := e.forEach(ctx, len(children), func(i int) error {
			_, _, err := e.copyManifest(ctx, ic, children[i].Digest, " (child of "+d.String()+")", "", recheck && oci.IsIndex(children[i].MediaType))
			return err
		}); err != nil {
			return false, err
		}
		// The image's own blobs (not an index child's): once every read has
		// begun, the next image may start (see admission).
		var reads *readsLeft
		if parent == "" && ic.slot != nil {
			reads = newReadsLeft(len(refs.Blobs), ic.slot.finishing)
		}
		if err := e.forEach(ctx, len(refs.Blobs), func(i int) error {
			begun := reads.begun()
			defer begun()
			return e.ensureBlob(ctx, ic, refs.Blobs[i], begun)
		}); err != nil {
			return false, err
		}
		ref := tag
		if ref == "" {
			ref = d.String()
		}
		sparse := len(children) < len(refs.Manifests)
		if parent == "" {
			// Everything the image reads is read (an index: its children
			// are copied): the next image may start while this one pushes.
			ic.slot.finishing()
		}
		if err := e.putIndex(ctx, job, ref, m, sparse); err != nil {
			if tag == "" || !refusedForGood(err) || e.dst.PutManifest(ctx, job.Dest, d.String(), m) != nil {
				return false, sparseRefused(job, d, sparse, err)
			}
			tagged = false
		}
		e.manifestsSent.Add(1)
		ic.sent.Store(true)
		got = &m
		return true, nil
	})
	return got, tagged && got != nil, err
}
