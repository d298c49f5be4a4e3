package transfer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Prefetch sends the blobs of images while the plan is still being made, so
// that copying starts as soon as the first image is resolved instead of after
// the last one (and after signature discovery). It sends blobs only: configs
// and layers, of the children of indexes too (honouring Job.Platforms), with
// the copy engine's guarantees (one transfer per digest, verified, mounted when
// another repository holds it, host limits). Manifests and tags are left to
// the Prefetch's Copy, which runs once the plan is final:
// so the destination never shows an image the plan does not hold (a blocked
// image, a conflicting destination, a run interrupted while planning), and a
// re-run starts from what the destination holds, as after any interruption.
//
// Its Copy uses the Prefetch's engine and endpoints: what the prefetch sent or found is present
// without asking the destination again, counted once in the report (and in the
// bytes of the first image that needs it), and replayed to Options.Progress as
// done. A prefetch failure is never final: Copy tries that blob again itself.
type Prefetch struct {
	e      *copyEngine
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	late   atomic.Bool // Copy has begun: images not started yet are its

	// The images given and not started yet, read in the order given by
	// workers: at most ParallelImages of them reading (their images' blob
	// reads not all begun), as many again finishing (their images' bytes
	// streaming: the next images' round trips overlap them, as in Copy's
	// admission). A worker is started when an image waits and fewer read,
	// and ends when none waits or too many read. (A goroutine per image,
	// most of them waiting for their turn, cost a re-run of 20,000 images a
	// goroutine and its stack growth each.)
	qmu       sync.Mutex
	queue     []Job
	workers   int
	finishing int // workers whose image's reads have all begun
	// The repository listings of a re-run (tagListings.warm) waiting, run
	// in the order given by at most warmListings listers the same way (a
	// goroutine per repository, 5,000 at 20,000 images, each growing its
	// stack for its request, cost a no-op re-run a tenth of a CPU-second).
	lists   []func(context.Context)
	listers int
}

// prefetched is what the engine keeps about a Prefetch: bytes sent per
// "repo@digest" not yet counted by an image of Copy.
type prefetched struct {
	sent map[string]int64
}

// NewPrefetch starts an idle prefetch from src to dst. opts are Copy's options
// (Progress, Held and Elsewhere are not used here: Copy brings its own; a
// prefetch is not for shards). Stop must be called once the copy is over.
func NewPrefetch(ctx context.Context, src endpoint.Source, dst endpoint.Destination, opts Options) *Prefetch {
	opts.Progress, opts.Held, opts.Elsewhere = nil, nil, nil
	e := newCopyEngine(src, dst, opts)
	e.early = &prefetched{sent: map[string]int64{}}
	ctx, cancel := context.WithCancel(ctx)
	return &Prefetch{e: e, ctx: ctx, cancel: cancel}
}

// Expect tells the endpoints which repositories the jobs read and write
// (digests need not be known yet), before the first request: tokens are then
// asked for many repositories at once. Nil-safe.
func (p *Prefetch) Expect(jobs []Job) {
	if p != nil {
		expectRepos(p.e.src, p.e.dst, jobs)
	}
}

// Add starts sending the blobs of job (resolved: its Digest is set) in the
// background. Nil-safe; ignored after Stop.
func (p *Prefetch) Add(job Job) {
	if p == nil || p.ctx.Err() != nil || job.Digest.Validate() != nil || job.Source == "" || job.Dest == "" {
		return
	}
	p.e.mu.Lock()
	p.e.jobs = append(p.e.jobs, job) // discoverPresent may look at it
	p.e.mu.Unlock()
	list := p.e.presence.lists.warm(job) // a re-run: its repository's listing
	p.qmu.Lock()
	lister := false
	if list != nil {
		p.lists = append(p.lists, list)
		if lister = p.listers < warmListings; lister {
			p.listers++
			p.wg.Add(1)
		}
	}
	p.queue = append(p.queue, job)
	start := p.startWorker()
	p.qmu.Unlock()
	if lister {
		go p.list()
	}
	if start {
		go p.work()
	}
}

// startWorker counts a new worker when an image waits, fewer than
// ParallelImages workers are reading and fewer than twice as many work;
// p.qmu is held. The caller starts it (work).
func (p *Prefetch) startWorker() bool {
	n := max(p.e.opts.ParallelImages, 1)
	if len(p.queue) == 0 || p.workers-p.finishing >= n || p.workers >= 2*n {
		return false
	}
	p.workers++
	p.wg.Add(1)
	return true
}

// list runs the listings waiting, oldest first, until none waits or the
// prefetch is stopped (those left are listed by the images that need them,
// as without a prefetch).
func (p *Prefetch) list() {
	defer p.wg.Done()
	for {
		p.qmu.Lock()
		if p.ctx.Err() != nil {
			p.lists = nil
		}
		if len(p.lists) == 0 {
			p.listers--
			p.qmu.Unlock()
			return
		}
		list := p.lists[0]
		p.lists[0] = nil
		p.lists = p.lists[1:]
		p.qmu.Unlock()
		list(p.ctx)
	}
}

// work prefetches the images waiting, oldest first, until none waits, more
// than ParallelImages workers read, or the prefetch is stopped.
func (p *Prefetch) work() {
	defer p.wg.Done()
	for {
		p.qmu.Lock()
		if p.ctx.Err() != nil {
			p.queue = nil // stopped: the images waiting are left to Copy
		}
		if len(p.queue) == 0 || p.workers-p.finishing > max(p.e.opts.ParallelImages, 1) {
			p.workers--
			p.qmu.Unlock()
			return
		}
		job := p.queue[0]
		p.queue[0] = Job{}
		p.queue = p.queue[1:]
		p.qmu.Unlock()
		finishing := false
		p.prefetch(job, func() { // once: its reads have begun
			p.qmu.Lock()
			finishing = true
			p.finishing++
			start := p.startWorker()
			p.qmu.Unlock()
			if start {
				go p.work()
			}
		})
		p.qmu.Lock()
		if finishing {
			p.finishing--
		}
		p.qmu.Unlock()
	}
}

// prefetch reads one image's manifests and sends its blobs, unless Copy has
// begun; begun is called (at most once) when the reads of its blobs have all
// begun.
func (p *Prefetch) prefetch(job Job, begun func()) {
	if p.late.Load() {
		return
	}
	ctx := p.ctx
	if d := p.e.opts.ImageTimeout; d > 0 { // --image-timeout bounds an image's prefetch too
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if err := p.e.prefetchImage(ctx, job, sync.OnceFunc(begun)); err != nil && p.ctx.Err() == nil {
		p.e.log.Debug("prefetch: left to the copy", "source", job.Source+"@"+job.Digest.String(), "error", err)
	}
}

// Stop cancels what the prefetch still does and waits for it. Nil-safe.
func (p *Prefetch) Stop() {
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
}

// Copy copies the final plan's jobs (as transfer.Copy does) from and to the
// endpoints the prefetch was made with, continuing with its engine. Call it
// once, then Stop.
func (p *Prefetch) Copy(ctx context.Context, jobs []Job, opts Options) (*Report, error) {
	return copyWith(ctx, p.engine(opts), jobs, opts)
}

// engine is the copy engine Copy runs: the prefetch's, given Copy's progress
// callback (told first of the blobs already present).
func (p *Prefetch) engine(opts Options) *copyEngine {
	p.late.Store(true)
	e := p.e
	e.progMu.Lock()
	defer e.progMu.Unlock()
	e.opts.Progress = opts.Progress
	for _, d := range e.doneBlobs {
		if opts.Progress != nil {
			d := d
			opts.Progress(ProgressEvent{BytesDone: e.bytesDone, BytesTotal: e.bytesTotal, Blob: &d})
		}
	}
	return e
}

// prefetchImage sends the blobs of job's image unless the destination holds
// it (asked as Copy asks, once: Copy does not ask again).
func (e *copyEngine) prefetchImage(ctx context.Context, job Job, begun func()) error {
	if err := e.askPresence(ctx, job); err != nil {
		return err
	}
	if held, _ := e.destHolds(ctx, repoDigest{job.Dest, job.Digest}); held {
		return nil // a re-run: Copy checks what an index may lack
	}
	return e.prefetchManifest(ctx, &imageCtx{job: job, early: true, begun: begun}, job.Digest)
}

// prefetchManifest sends the blobs manifest d references, and those of its
// children (the platform subset of the job), without pushing any manifest.
func (e *copyEngine) prefetchManifest(ctx context.Context, ic *imageCtx, d digest.Digest) error {
	job := ic.job
	m, err := e.src.Manifest(ctx, job.Source, d.String())
	if err != nil {
		return err
	}
	if digest.FromBytes(m.Raw) != d {
		return fmt.Errorf("manifest %s@%s: content has digest %s: %w", job.Source, d, digest.FromBytes(m.Raw), oci.ErrDigestMismatch)
	}
	refs, err := oci.Parse(m)
	if err != nil {
		return err
	}
	children, err := subset(job, d, refs.Manifests)
	if err != nil {
		return err
	}
	e.addTotal(refs.Blobs)
	if err := e.forEach(ctx, len(children), func(i int) error {
		return e.prefetchManifest(ctx, ic, children[i].Digest)
	}); err != nil {
		return err
	}
	// The image's own blobs (not an index child's): once every read has
	// begun, the worker's place among those reading is free.
	var reads *readsLeft
	if d == job.Digest {
		reads = newReadsLeft(len(refs.Blobs), ic.begun)
	}
	return e.forEach(ctx, len(refs.Blobs), func(i int) error {
		begun := reads.begun()
		defer begun()
		return e.ensureBlob(ctx, ic, refs.Blobs[i], begun)
	})
}

// earlySent records that the prefetch sent d into repo (ensureBlob).
func (e *copyEngine) earlySent(repo string, d endpoint.Descriptor) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.early.sent[repo+"@"+d.Digest.String()] = d.Size
}

// claimEarly counts a blob the prefetch sent into the job's repository as sent
// by ic's image, the first image of Copy that needs it (ensureBlob).
func (e *copyEngine) claimEarly(ic *imageCtx, key string) {
	if e.early == nil || ic.early {
		return
	}
	e.mu.Lock()
	n, ok := e.early.sent[key]
	delete(e.early.sent, key)
	e.mu.Unlock()
	if ok {
		ic.bytes.Add(n)
		ic.sent.Store(true)
	}
}

// begin readies the engine for Copy's jobs: held says what the caller found
// at the destination (Options.Held). A Prefetch's engine may be busy still:
// everything shared is set under its locks.
func (e *copyEngine) begin(jobs []Job, held []Held) {
	e.progMu.Lock()
	e.imagesTotal = len(jobs)
	e.progMu.Unlock()
	expectRepos(e.src, e.dst, jobs)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.jobs = append(e.jobs, jobs...) // after the prefetch's: jobCursor stays valid
	for i, h := range held {
		if i >= len(jobs) {
			break
		}
		rd := repoDigest{jobs[i].Dest, jobs[i].Digest}
		if h.NewRepo {
			e.presence.markNew(rd.repo)
		}
		if !e.holds[rd] && h.Manifest {
			host := endpoint.RepoHost(rd.repo)
			e.toWalk[host] = append(e.toWalk[host], rd)
		}
		e.holds[rd] = h.Manifest
		e.heldSeen = e.heldSeen || h.Manifest
		if h.FirstTag && len(jobs[i].Tags) > 0 {
			e.tagged[jobs[i].Dest+":"+jobs[i].Tags[0]] = jobs[i].Digest
		}
	}
}

// Destination returns dst answering Measure's questions from what the
// prefetch learnt (and asking through it what it did not learn yet), so that
// measuring the final plan asks the destination nothing the prefetch asked.
// Nil-safe: without a prefetch it is dst.
func (p *Prefetch) Destination(dst EstimateDestination) EstimateDestination {
	if p == nil {
		return dst
	}
	return knownDestination{dst, p.e}
}

type knownDestination struct {
	EstimateDestination
	e *copyEngine
}

// ManifestExists asks about the job (repo, d) as Copy would, once per job
// (askPresence), then answers from what the engine knows.
func (k knownDestination) ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error) {
	job := Job{Dest: repo, Digest: d}
	if reference != d.String() {
		job.Tags = []string{reference}
	}
	if err := k.e.askPresence(ctx, job); err != nil {
		return false, err
	}
	k.e.mu.Lock()
	held, asked := k.e.holds[repoDigest{repo, d}]
	tagged := k.e.tagged[repo+":"+reference] == d
	k.e.mu.Unlock()
	switch {
	case !asked:
		return k.EstimateDestination.ManifestExists(ctx, repo, reference, d)
	case reference == d.String() || tagged || !held:
		return held && (reference == d.String() || tagged), nil
	}
	return k.EstimateDestination.ManifestExists(ctx, repo, reference, d) // held: whether the tag names it
}
