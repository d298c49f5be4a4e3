package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// ErrDigestMismatch is returned (wrapped) when content does not match its digest
// or declared size. Nothing with a mismatching digest is ever committed.
var ErrDigestMismatch = oci.ErrDigestMismatch

// ErrCopyFailed is returned (wrapped) by Copy when at least one image failed; the
// report says which and why.
var ErrCopyFailed = errors.New("some images were not copied")

// ErrUnsupportedManifest is returned (wrapped) for manifests the engine cannot
// copy (Docker schema 1, unknown media types).
var ErrUnsupportedManifest = oci.ErrUnsupportedManifest

// Job is one image to copy: the manifest Digest of repository Source at the
// source, to repository Dest at the destination, then tagged with Tags.
type Job struct {
	Source string        `json:"source"`
	Digest digest.Digest `json:"digest"`
	Dest   string        `json:"dest"`
	Tags   []string      `json:"tags,omitempty"`
}

// CopyOptions tunes Copy. Zero values take the defaults.
type CopyOptions struct {
	// ParallelImages is --parallel-images: images copied at once (default 4).
	ParallelImages int
	// ParallelLayers is --parallel-layers: blobs of one image transferred at once
	// (default 5).
	ParallelLayers int
	// MaxPerRegistry bounds blob transfers touching one registry host at once,
	// across all images (default 2 × ParallelLayers). Hosts are taken from the
	// repository names ("host/path").
	MaxPerRegistry int
	// RetryTimes is --retry-times for whole blob transfers (a broken upload is
	// restarted from a fresh source read): 0 means 5, negative means none.
	RetryTimes int
	Retry      RetryPolicy
	// Logger receives debug and warning lines; nil discards.
	Logger *slog.Logger
	// Progress, when set, is called (serially) after each blob and image.
	Progress func(ProgressEvent)
}

// ProgressEvent reports progress. BytesTotal grows as manifests are discovered.
type ProgressEvent struct {
	ImagesDone, ImagesTotal int
	ImagesFailed            int
	BytesDone, BytesTotal   int64
	// Image is the job that just finished (nil for blob events).
	Image *ImageResult
	// Blob is the blob that just became present at the destination (sent,
	// mounted or already there); nil for image events.
	Blob *endpoint.Descriptor
}

// Image statuses.
const (
	StatusCopied  = "copied"
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// ImageResult is the outcome of one job.
type ImageResult struct {
	Job       Job    `json:"job"`
	Status    string `json:"status"`
	Err       string `json:"error,omitempty"`
	BytesSent int64  `json:"bytesSent"`
}

// CopyReport is what Copy did. It is JSON-serialisable.
type CopyReport struct {
	Images        []ImageResult `json:"images"`
	BlobsSent     int64         `json:"blobsSent"`
	BlobsMounted  int64         `json:"blobsMounted"`
	BlobsSkipped  int64         `json:"blobsSkipped"`
	BytesSent     int64         `json:"bytesSent"`
	ManifestsSent int64         `json:"manifestsSent"`
	Duration      time.Duration `json:"duration"`
}

// Failed returns the results of the failed jobs.
func (r *CopyReport) Failed() []ImageResult {
	var out []ImageResult
	for _, im := range r.Images {
		if im.Status == StatusFailed {
			out = append(out, im)
		}
	}
	return out
}

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
// wraps ErrCopyFailed when an image failed, or is ctx's error when cancelled; the
// report is always returned.
func Copy(ctx context.Context, src endpoint.Source, dst endpoint.Destination, jobs []Job, opts CopyOptions) (*CopyReport, error) {
	start := time.Now()
	e := newCopyEngine(src, dst, opts)
	e.imagesTotal = len(jobs)
	report := &CopyReport{Images: make([]ImageResult, len(jobs))}
	imgSem := make(chan struct{}, e.opts.ParallelImages)
	var wg sync.WaitGroup
	for i, job := range jobs {
		report.Images[i] = ImageResult{Job: job}
		select {
		case imgSem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			report.Images[i].Status = StatusFailed
			report.Images[i].Err = "not started: " + ctx.Err().Error()
			continue
		}
		wg.Add(1)
		go func(res *ImageResult) {
			defer wg.Done()
			defer func() { <-imgSem }()
			e.copyImage(ctx, res)
			e.imageDone(res)
		}(&report.Images[i])
	}
	wg.Wait()
	report.BlobsSent = e.blobsSent.Load()
	report.BlobsMounted = e.blobsMounted.Load()
	report.BlobsSkipped = e.blobsSkipped.Load()
	report.BytesSent = e.bytesSent.Load()
	report.ManifestsSent = e.manifestsSent.Load()
	report.Duration = time.Since(start)
	if err := ctx.Err(); err != nil {
		return report, err
	}
	if n := len(report.Failed()); n > 0 {
		return report, fmt.Errorf("%d of %d images failed (first: %s: %s): %w", n, len(jobs), report.Failed()[0].Job.Source, report.Failed()[0].Err, ErrCopyFailed)
	}
	return report, nil
}

type copyEngine struct {
	src    endpoint.Source
	dst    endpoint.Destination
	opts   CopyOptions
	policy RetryPolicy
	log    *slog.Logger

	mu        sync.Mutex
	blobs     map[string]*copyFlight          // dest repo + digest → "present in that repo"
	manifests map[string]*copyFlight          // dest repo + digest → manifest (and children) present
	digestMu  map[digest.Digest]chan struct{} // one byte transfer per digest at a time
	present   map[digest.Digest][]string      // dest repos known to hold the digest
	hostSems  map[string]chan struct{}

	// Images an earlier run already put at the destination are skipped without
	// reading their manifests; their blobs are discovered lazily, only when a
	// new blob has no repository to be mounted from (see discoverPresent).
	walkMu  sync.Mutex
	skipped []repoDigest
	walked  map[repoDigest]bool

	blobsSent, blobsMounted, blobsSkipped, bytesSent, manifestsSent atomic.Int64

	progMu                              sync.Mutex
	imagesTotal, imagesDone, imagesFail int
	bytesDone, bytesTotal               int64
	seenTotal, seenDone                 map[digest.Digest]bool
}

type copyFlight struct {
	done chan struct{}
	err  error
	sent bool // this flight transferred bytes or pushed a manifest
}

func newCopyEngine(src endpoint.Source, dst endpoint.Destination, opts CopyOptions) *copyEngine {
	if opts.ParallelImages <= 0 {
		opts.ParallelImages = 4
	}
	if opts.ParallelLayers <= 0 {
		opts.ParallelLayers = 5
	}
	if opts.MaxPerRegistry <= 0 {
		opts.MaxPerRegistry = 2 * opts.ParallelLayers
	}
	p := opts.Retry
	switch {
	case opts.RetryTimes == 0:
		p.Times = defaultRetryTimes
	case opts.RetryTimes < 0:
		p.Times = 0
	default:
		p.Times = opts.RetryTimes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &copyEngine{
		src: src, dst: dst, opts: opts, policy: p.withDefaults(), log: log,
		blobs: map[string]*copyFlight{}, manifests: map[string]*copyFlight{},
		digestMu: map[digest.Digest]chan struct{}{}, present: map[digest.Digest][]string{},
		hostSems: map[string]chan struct{}{}, seenTotal: map[digest.Digest]bool{}, seenDone: map[digest.Digest]bool{},
		walked: map[repoDigest]bool{},
	}
}

type repoDigest struct {
	repo string
	d    digest.Digest
}

// discoverPresent looks for blob d in the images that were already at the
// destination (skipped), reading their manifests from the destination, until one
// on host holds d. Each manifest is read at most once per run. It needs a
// destination that can also be read (a registry); others have nothing to find.
func (e *copyEngine) discoverPresent(ctx context.Context, d digest.Digest, host string) {
	rd, ok := e.dst.(endpoint.Source)
	if !ok {
		return
	}
	e.walkMu.Lock()
	defer e.walkMu.Unlock()
	for i := 0; i < len(e.skipped); i++ {
		if e.presentOn(d, host) || ctx.Err() != nil {
			return
		}
		rdg := e.skipped[i]
		if e.walked[rdg] || repoHost(rdg.repo) != host {
			continue
		}
		e.walked[rdg] = true
		m, err := rd.Manifest(ctx, rdg.repo, rdg.d.String())
		if err != nil {
			e.log.Debug("cannot read a destination manifest to find mountable blobs", "repo", rdg.repo, "digest", rdg.d, "error", err)
			continue
		}
		refs, err := oci.Parse(m)
		if err != nil {
			continue
		}
		for _, b := range refs.Blobs {
			e.markPresent(b.Digest, rdg.repo)
		}
		for _, c := range refs.Manifests {
			e.skipped = append(e.skipped, repoDigest{rdg.repo, c.Digest})
		}
	}
}

// flight runs f once per key; other callers wait for (and share) its result.
func (e *copyEngine) flight(ctx context.Context, m map[string]*copyFlight, key string, f func() (bool, error)) (leader bool, sent bool, err error) {
	e.mu.Lock()
	fl, ok := m[key]
	if !ok {
		fl = &copyFlight{done: make(chan struct{})}
		m[key] = fl
	}
	e.mu.Unlock()
	if ok {
		select {
		case <-fl.done:
			return false, false, fl.err
		case <-ctx.Done():
			return false, false, ctx.Err()
		}
	}
	fl.sent, fl.err = f()
	if fl.err != nil && ctx.Err() != nil {
		// Cancelled: do not cache, a later caller (none in this run) may retry.
		e.mu.Lock()
		delete(m, key)
		e.mu.Unlock()
	}
	close(fl.done)
	return true, fl.sent, fl.err
}

func (e *copyEngine) imageDone(res *ImageResult) {
	e.progMu.Lock()
	defer e.progMu.Unlock()
	e.imagesDone++
	if res.Status == StatusFailed {
		e.imagesFail++
		e.log.Warn("image copy failed", "source", res.Job.Source+"@"+res.Job.Digest.String(), "dest", res.Job.Dest, "error", res.Err)
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
	e.bytesDone += d.Size
	if e.opts.Progress != nil {
		e.opts.Progress(ProgressEvent{ImagesDone: e.imagesDone, ImagesTotal: e.imagesTotal, ImagesFailed: e.imagesFail,
			BytesDone: e.bytesDone, BytesTotal: e.bytesTotal, Blob: &d})
	}
}

// imageCtx carries per-image accounting.
type imageCtx struct {
	job   Job
	sent  atomic.Bool
	bytes atomic.Int64
}

func (e *copyEngine) copyImage(ctx context.Context, res *ImageResult) {
	job := res.Job
	ic := &imageCtx{job: job}
	err := e.copyJob(ctx, ic)
	res.BytesSent = ic.bytes.Load()
	switch {
	case err != nil:
		res.Status, res.Err = StatusFailed, err.Error()
	case ic.sent.Load():
		res.Status = StatusCopied
	default:
		res.Status = StatusSkipped
	}
}

func (e *copyEngine) copyJob(ctx context.Context, ic *imageCtx) error {
	job := ic.job
	if err := job.Digest.Validate(); err != nil {
		return fmt.Errorf("image %s: bad digest %q: %w", job.Source, job.Digest, err)
	}
	if job.Source == "" || job.Dest == "" {
		return fmt.Errorf("image %s@%s: source and destination repositories are required", job.Source, job.Digest)
	}
	// The top manifest is pushed under its first tag when it has one: a PUT by tag
	// stores the manifest under its digest too, so one request does both.
	putRef := ""
	if len(job.Tags) > 0 {
		putRef = job.Tags[0]
	}
	m, pushedAs, err := e.copyManifest(ctx, ic, job.Digest, "", putRef)
	if err != nil {
		return err
	}
	for _, tag := range job.Tags {
		if tag == pushedAs {
			continue
		}
		ok, err := e.dst.ManifestExists(ctx, job.Dest, tag, job.Digest)
		if err != nil {
			return fmt.Errorf("tag %s:%s: %w", job.Dest, tag, err)
		}
		if ok {
			continue
		}
		if m == nil {
			mm, err := e.src.Manifest(ctx, job.Source, job.Digest.String())
			if err != nil {
				return err
			}
			if mm.Digest != job.Digest {
				return fmt.Errorf("manifest %s@%s: source returned %s: %w", job.Source, job.Digest, mm.Digest, ErrDigestMismatch)
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
// job's destination repository, pushing it under putRef (a tag; "" means by
// digest). It returns the manifest when it had to fetch it, and the reference it
// pushed it under ("" when it did not push).
func (e *copyEngine) copyManifest(ctx context.Context, ic *imageCtx, d digest.Digest, parent, putRef string) (*endpoint.Manifest, string, error) {
	job := ic.job
	var got *endpoint.Manifest
	pushedAs := ""
	if putRef == "" {
		putRef = d.String()
	}
	_, _, err := e.flight(ctx, e.manifests, job.Dest+"@"+d.String(), func() (bool, error) {
		ok, err := e.dst.ManifestExists(ctx, job.Dest, d.String(), d)
		if err != nil {
			return false, err
		}
		if ok {
			e.walkMu.Lock()
			e.skipped = append(e.skipped, repoDigest{job.Dest, d})
			e.walkMu.Unlock()
			return false, nil
		}
		m, err := e.src.Manifest(ctx, job.Source, d.String())
		if err != nil {
			return false, err
		}
		if m.Digest == "" {
			m.Digest = digest.FromBytes(m.Raw)
		}
		if m.Digest != d || digest.FromBytes(m.Raw) != d {
			return false, fmt.Errorf("manifest %s@%s: content has digest %s: %w", job.Source, d, digest.FromBytes(m.Raw), ErrDigestMismatch)
		}
		refs, err := oci.Parse(m)
		if err != nil {
			return false, fmt.Errorf("manifest %s@%s%s: %w", job.Source, d, parent, err)
		}
		e.addTotal(refs.Blobs)
		// Children first (index), then blobs, each bounded by ParallelLayers.
		if err := e.forEach(ctx, len(refs.Manifests), func(i int) error {
			_, _, err := e.copyManifest(ctx, ic, refs.Manifests[i].Digest, " (child of "+d.String()+")", "")
			return err
		}); err != nil {
			return false, err
		}
		if err := e.forEach(ctx, len(refs.Blobs), func(i int) error {
			return e.ensureBlob(ctx, ic, refs.Blobs[i])
		}); err != nil {
			return false, err
		}
		if err := e.dst.PutManifest(ctx, job.Dest, putRef, m); err != nil {
			return false, err
		}
		e.manifestsSent.Add(1)
		ic.sent.Store(true)
		got = &m
		if putRef != d.String() {
			pushedAs = putRef
		}
		return true, nil
	})
	return got, pushedAs, err
}

// forEach runs f(0..n-1) with at most ParallelLayers at once; the first error is
// returned after the others have finished (siblings are not cancelled, so that
// shared blobs still land for other images).
func (e *copyEngine) forEach(ctx context.Context, n int, f func(int) error) error {
	if n == 0 {
		return nil
	}
	sem := make(chan struct{}, e.opts.ParallelLayers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			mu.Lock()
			if first == nil {
				first = ctx.Err()
			}
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return first
}

func repoHost(repo string) string {
	if i := strings.IndexByte(repo, '/'); i > 0 {
		return repo[:i]
	}
	return repo
}

// ensureBlob makes sure blob d is in the job's destination repository: HEAD, then
// mount from a repository that holds it, then (once per digest) transfer.
func (e *copyEngine) ensureBlob(ctx context.Context, ic *imageCtx, d endpoint.Descriptor) error {
	job := ic.job
	_, _, err := e.flight(ctx, e.blobs, job.Dest+"@"+d.Digest.String(), func() (bool, error) {
		ok, err := e.dst.BlobExists(ctx, job.Dest, d)
		if err != nil {
			return false, err
		}
		if ok {
			e.markPresent(d.Digest, job.Dest)
			e.blobsSkipped.Add(1)
			e.blobDone(d)
			return false, nil
		}
		// One transfer of this digest at a time; later callers mount.
		unlock, err := e.lockDigest(ctx, d.Digest)
		if err != nil {
			return false, err
		}
		defer unlock()
		// Another image may have put it there while this one waited for the lock
		// (destinations with one blob store, like an archive, hold it for every
		// repository at once).
		// When nobody placed it this run, the HEAD above still holds.
		if e.presentAnywhere(d.Digest) {
			if ok, err := e.dst.BlobExists(ctx, job.Dest, d); err == nil && ok {
				e.markPresent(d.Digest, job.Dest)
				e.blobsSkipped.Add(1)
				e.blobDone(d)
				return false, nil
			}
		}
		if len(e.mountCandidates(d.Digest, job.Dest, "")) == 0 {
			e.discoverPresent(ctx, d.Digest, repoHost(job.Dest))
		}
		for _, from := range e.mountCandidates(d.Digest, job.Dest, job.Source) {
			ok, err := e.dst.MountBlob(ctx, job.Dest, from, d)
			if err != nil {
				e.log.Debug("mount failed, will upload", "digest", d.Digest, "repo", job.Dest, "from", from, "error", err)
				continue
			}
			if ok {
				e.markPresent(d.Digest, job.Dest)
				e.blobsMounted.Add(1)
				e.blobDone(d)
				return false, nil
			}
		}
		if err := e.transfer(ctx, job.Source, job.Dest, d); err != nil {
			return false, err
		}
		e.markPresent(d.Digest, job.Dest)
		e.blobsSent.Add(1)
		e.bytesSent.Add(d.Size)
		ic.bytes.Add(d.Size)
		ic.sent.Store(true)
		e.blobDone(d)
		return true, nil
	})
	return err
}

func (e *copyEngine) markPresent(d digest.Digest, repo string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.present[d] {
		if r == repo {
			return
		}
	}
	e.present[d] = append(e.present[d], repo)
}

// presentAnywhere reports whether this run placed d in some repository.
func (e *copyEngine) presentAnywhere(d digest.Digest) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.present[d]) > 0
}

// presentOn reports whether some repository on host is known to hold d.
func (e *copyEngine) presentOn(d digest.Digest, host string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.present[d] {
		if repoHost(r) == host {
			return true
		}
	}
	return false
}

// mountCandidates lists destination repositories on repo's host known to hold d,
// and the source repository when it is on the same host.
func (e *copyEngine) mountCandidates(d digest.Digest, repo, srcRepo string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	host := repoHost(repo)
	var out []string
	for _, r := range e.present[d] {
		if r != repo && repoHost(r) == host {
			out = append(out, r)
			if len(out) == 2 {
				break
			}
		}
	}
	if srcRepo != repo && repoHost(srcRepo) == host && strings.Contains(srcRepo, "/") {
		out = append(out, srcRepo)
	}
	return out
}

func (e *copyEngine) lockDigest(ctx context.Context, d digest.Digest) (func(), error) {
	e.mu.Lock()
	ch := e.digestMu[d]
	if ch == nil {
		ch = make(chan struct{}, 1)
		e.digestMu[d] = ch
	}
	e.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// acquireHosts takes a transfer slot on each distinct host, in sorted order so
// that two transfers never wait on each other.
func (e *copyEngine) acquireHosts(ctx context.Context, hosts ...string) (func(), error) {
	sort.Strings(hosts)
	var held []chan struct{}
	release := func() {
		for _, ch := range held {
			<-ch
		}
	}
	for i, h := range hosts {
		if i > 0 && hosts[i-1] == h {
			continue
		}
		e.mu.Lock()
		ch := e.hostSems[h]
		if ch == nil {
			ch = make(chan struct{}, e.opts.MaxPerRegistry)
			e.hostSems[h] = ch
		}
		e.mu.Unlock()
		select {
		case ch <- struct{}{}:
			held = append(held, ch)
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}

// transfer reads d from the source and writes it to the destination, verified,
// retrying the whole transfer on transient errors.
func (e *copyEngine) transfer(ctx context.Context, srcRepo, dstRepo string, d endpoint.Descriptor) error {
	release, err := e.acquireHosts(ctx, repoHost(srcRepo), repoHost(dstRepo))
	if err != nil {
		return err
	}
	defer release()
	for attempt := 0; ; attempt++ {
		err := e.transferOnce(ctx, srcRepo, dstRepo, d)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !isRetryable(err) || attempt >= e.policy.Times {
			return fmt.Errorf("copy blob %s from %s to %s: %w", d.Digest, srcRepo, dstRepo, err)
		}
		e.log.Debug("retrying blob transfer", "digest", d.Digest, "attempt", attempt+1, "error", err)
		if err := sleepCtx(ctx, e.policy.delay(attempt+1, 0, false)); err != nil {
			return err
		}
	}
}

func (e *copyEngine) transferOnce(ctx context.Context, srcRepo, dstRepo string, d endpoint.Descriptor) error {
	rc, err := e.src.Blob(ctx, srcRepo, d)
	if err != nil {
		return err
	}
	defer rc.Close()
	v := oci.NewVerifier(rc, d)
	if err := e.dst.PutBlob(ctx, dstRepo, d, v); err != nil {
		return err
	}
	if !v.Verified() {
		// A destination that stopped reading early: nothing proves the content.
		return fmt.Errorf("destination accepted blob %s after %d of %d bytes: %w", d.Digest, v.N(), d.Size, ErrDigestMismatch)
	}
	return nil
}
