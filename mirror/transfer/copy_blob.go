package transfer

import (
	"context"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// ensureBlob makes sure blob d is in the job's destination repository: mount it
// from a repository known to hold it, else ask the destination (one request for
// a registry: see endpoint.Uploader) and, when it does not hold d, look for a
// repository to mount from among the manifests it holds, and only then transfer
// it. One digest is handled by one image at a time, so that later images mount
// what an earlier one sent. begun (nil: none) is called when the blob's body
// starts coming from the source (transfer).
func (e *copyEngine) ensureBlob(ctx context.Context, ic *imageCtx, d endpoint.Descriptor, begun func()) error {
	job := ic.job
	key := job.Dest + "@" + d.Digest.String()
	leader, _, err := e.flight(ctx, e.blobs, key, ic.early, func() (bool, error) {
		unlock, err := e.lockDigest(ctx, d.Digest)
		if err != nil {
			return false, err
		}
		defer unlock()
		tried := map[string]bool{}
		from := e.mountCandidates(d.Digest, job.Dest, job.Source)
		known := len(from) > 0
		if repo, ok := e.opts.Elsewhere[d.Digest]; ok && e.awaitElsewhere(ctx, repo, d) {
			if repo == job.Dest {
				// The other worker put it into this very repository.
				e.blobPresent(d, job.Dest, &e.blobsSkipped)
				return false, nil
			}
			from = append([]string{repo}, from...)
		}
		if e.mountFrom(ctx, job, d, from, tried) {
			return false, nil
		}
		up, err := startBlob(ctx, e.dst, job.Dest, d)
		if err != nil {
			return false, err
		}
		if up == nil {
			e.blobPresent(d, job.Dest, &e.blobsSkipped)
			return false, nil
		}
		if !known {
			// Nothing known this run: an earlier run may have put d in another
			// repository of this host.
			e.discoverPresent(ctx, d.Digest, endpoint.RepoHost(job.Dest))
			if e.mountFrom(ctx, job, d, e.mountCandidates(d.Digest, job.Dest, job.Source), tried) {
				up.Cancel(ctx)
				return false, nil
			}
		}
		if err := e.transfer(ctx, job.Source, job.Dest, d, up, begun); err != nil {
			return false, err
		}
		e.blobPresent(d, job.Dest, &e.blobsSent)
		e.bytesSent.Add(d.Size)
		ic.bytes.Add(d.Size)
		ic.sent.Store(true)
		if ic.early {
			e.earlySent(job.Dest, d)
		}
		return true, nil
	})
	if err == nil && !leader {
		e.claimEarly(ic, key)
	}
	return err
}

// mountFrom mounts d into the job's destination repository from the first of
// from that works (skipping those in tried, and recording the others there).
func (e *copyEngine) mountFrom(ctx context.Context, job Job, d endpoint.Descriptor, from []string, tried map[string]bool) bool {
	for _, f := range from {
		if tried[f] {
			continue
		}
		tried[f] = true
		ok, err := e.dst.MountBlob(ctx, job.Dest, f, d)
		if err != nil {
			e.log.Debug("mount failed, will upload", "digest", d.Digest, "repo", job.Dest, "from", f, "error", err)
			continue
		}
		if ok {
			e.blobPresent(d, job.Dest, &e.blobsMounted)
			return true
		}
	}
	return false
}

// blobPresent records that repo now holds d, counting how in counter.
func (e *copyEngine) blobPresent(d endpoint.Descriptor, repo string, counter *atomic.Int64) {
	e.markPresent(d.Digest, repo)
	counter.Add(1)
	e.blobDone(d)
}

// startBlob opens the upload of d into repo, or returns nil when repo holds d:
// with one request on destinations that can tell (endpoint.Uploader), else by
// asking BlobExists first.
func startBlob(ctx context.Context, dst endpoint.Destination, repo string, d endpoint.Descriptor) (endpoint.BlobUpload, error) {
	if u, ok := dst.(endpoint.Uploader); ok {
		return u.StartBlob(ctx, repo, d)
	}
	ok, err := dst.BlobExists(ctx, repo, d)
	if err != nil || ok {
		return nil, err
	}
	return putLater{dst, repo, d}, nil
}

// putLater is the upload of a destination without endpoint.Uploader: PutBlob.
type putLater struct {
	dst  endpoint.Destination
	repo string
	d    endpoint.Descriptor
}

func (p putLater) Write(ctx context.Context, r io.Reader) error {
	return p.dst.PutBlob(ctx, p.repo, p.d, r)
}

func (p putLater) Cancel(context.Context) {}

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

// presentOn reports whether some repository on host is known to hold d.
func (e *copyEngine) presentOn(d digest.Digest, host string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.present[d] {
		if endpoint.RepoHost(r) == host {
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
	host := endpoint.RepoHost(repo)
	var out []string
	for _, r := range e.present[d] {
		if r != repo && endpoint.RepoHost(r) == host {
			out = append(out, r)
			if len(out) == 2 {
				break
			}
		}
	}
	if srcRepo != repo && endpoint.RepoHost(srcRepo) == host && strings.Contains(srcRepo, "/") {
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

// acquireHosts takes a slot of the bound of the transfer's source host and
// one of its destination host's (limitOf), each bound once, in one order for
// every transfer (by host, the destination's first) so that two transfers
// never wait on each other. It returns ctx marked endpoint.InSlot, under which
// the transfer's requests take no slot of their own, and release, which says
// whether the transfer went well (the bounds adapt to it).
func (e *copyEngine) acquireHosts(ctx context.Context, srcHost, dstHost string) (_ context.Context, release func(ok bool), err error) {
	slots := []limitKey{{dstHost, true}, {srcHost, false}}
	if srcHost < dstHost {
		slots[0], slots[1] = slots[1], slots[0]
	}
	var held []endpoint.HostLimit
	release = func(ok bool) {
		for _, l := range held {
			l.Release(ok)
		}
	}
	for _, k := range slots {
		l := e.limitOf(k)
		if slices.Contains(held, l) {
			continue
		}
		// A transfer goes before the requests waiting for a slot of a bound
		// it shares with them (a blob read did before, with a bound of its
		// own): bytes on the link first.
		if err := l.AcquireFirst(ctx); err != nil {
			release(false)
			return nil, nil, err
		}
		held = append(held, l)
	}
	return endpoint.InSlot(ctx), release, nil
}

// limitKey names the bound of a host on one side of the copy.
type limitKey struct {
	host string
	dst  bool // the destination's (else the source's)
}

// limitOf is the bound of k's host on k's side: the endpoint's own when it
// keeps one (endpoint.HostLimiter: the registry client's, which its requests
// to the host share), its ceiling raised to MaxPerRegistry, else one the
// engine keeps (an archive, a layout), one per host.
func (e *copyEngine) limitOf(k limitKey) endpoint.HostLimit {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.hostLimits[k]; ok {
		return l
	}
	var ep any = e.src
	if k.dst {
		ep = e.dst
	}
	var l endpoint.HostLimit
	if hl, ok := ep.(endpoint.HostLimiter); ok {
		l = hl.HostLimit(k.host)
	}
	if l != nil {
		l.RaiseCeiling(e.opts.MaxPerRegistry)
	} else {
		own := e.ownLimits[k.host]
		if own == nil {
			own = newTransferLimit(e.opts.MaxPerRegistry).Logged(e.log, "blob transfers to "+k.host)
			e.ownLimits[k.host] = own
		}
		l = own
	}
	e.hostLimits[k] = l
	return l
}

// transfer reads d from the source and writes it to the destination, verified,
// as one operation under the retry policy: a transfer that breaks, or whose
// content fails verification on either side, is restarted from a fresh source
// read (a read that breaks midway resumes with a Range request, as an attempt
// of the same operation). The first attempt writes into up; later ones open a
// new upload (and stop there if an earlier attempt did land the blob). begun
// (nil: none) is called when a source read has its answer and its body
// streams.
func (e *copyEngine) transfer(ctx context.Context, srcRepo, dstRepo string, d endpoint.Descriptor, up endpoint.BlobUpload, begun func()) error {
	tctx, release, err := e.acquireHosts(ctx, endpoint.RepoHost(srcRepo), endpoint.RepoHost(dstRepo))
	if err != nil {
		if up != nil {
			up.Cancel(ctx)
		}
		return err
	}
	defer func() { release(err == nil) }()
	// A 429 or 5xx answer of either host cuts its bound where the registry
	// client reads it (the bound is the client's: HostLimit), and the client
	// records how long the source took to answer.
	err = e.policy.Do(tctx, e.log, "copy blob "+d.Digest.String()+" to "+dstRepo, func(ctx context.Context) (err error) {
		if up == nil {
			if up, err = startBlob(ctx, e.dst, dstRepo, d); err != nil || up == nil {
				return err
			}
		}
		cur := up
		up = nil
		err = e.transferOnce(ctx, srcRepo, d, cur, begun)
		if ru, ok := cur.(endpoint.ReusableUpload); ok && err != nil && ru.Reusable() {
			up = cur // the next attempt writes into the same session
		}
		return err
	})
	if up != nil {
		up.Cancel(tctx) // kept for an attempt that did not come
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	err = noteFailure(ctx, e.src, srcRepo, err)
	err = noteFailure(ctx, e.dst, dstRepo, err)
	return fmt.Errorf("copy blob %s from %s to %s: %w", d.Digest, srcRepo, dstRepo, err)
}

// failureNoter is implemented by endpoints that track unreachable hosts
// (registry.Client.NoteFailure).
type failureNoter interface {
	NoteFailure(ctx context.Context, repo string, err error) error
}

func noteFailure(ctx context.Context, ep any, repo string, err error) error {
	if n, ok := ep.(failureNoter); ok {
		return n.NoteFailure(ctx, repo, err)
	}
	return err
}

// transferOnce is one attempt of transfer. An upload holding the blob's first
// bytes (endpoint.ResumableUpload: an archive's staging area after an
// interruption) is resumed: only the rest is read from the source (a Range
// request), verified from the hash state of the bytes held, so that no byte
// is fetched twice.
func (e *copyEngine) transferOnce(ctx context.Context, srcRepo string, d endpoint.Descriptor, up endpoint.BlobUpload, begun func()) error {
	ru, resumable := up.(endpoint.ResumableUpload)
	var held int64
	var h hash.Hash
	if resumable {
		var err error
		if held, h, err = ru.Held(); err != nil {
			up.Cancel(ctx)
			return err
		}
	}
	rc, off, err := endpoint.BlobFrom(ctx, e.src, srcRepo, d, held)
	if err != nil {
		up.Cancel(ctx)
		return err
	}
	defer rc.Close()
	if begun != nil {
		begun()
	}
	if off != held {
		h = nil // the source reads from the start: the held bytes are dropped
	}
	if off > 0 {
		e.log.Debug("resuming a blob from the bytes held", "digest", d.Digest, "offset", off, "size", d.Size)
	}
	v := oci.NewVerifierFrom(rc, d, off, h)
	if resumable {
		err = ru.WriteFrom(ctx, v, off)
	} else {
		err = up.Write(ctx, v)
	}
	if err != nil {
		return err
	}
	if !v.Verified() {
		// A destination that stopped reading early: nothing proves the content.
		return fmt.Errorf("destination accepted blob %s after %d of %d bytes: %w", d.Digest, v.N(), d.Size, oci.ErrDigestMismatch)
	}
	e.bytesResumed.Add(off)
	return nil
}

// awaitElsewhere waits until repo (where another worker sends d) holds d, polling
// with backoff, for at most ElsewhereWait. It reports whether d arrived.
func (e *copyEngine) awaitElsewhere(ctx context.Context, repo string, d endpoint.Descriptor) bool {
	limit := e.opts.ElsewhereWait
	if limit <= 0 {
		limit = 30 * time.Minute
	}
	deadline := time.Now().Add(limit)
	wait := 100 * time.Millisecond
	for {
		if ok, err := e.dst.BlobExists(ctx, repo, d); err == nil && ok {
			return true
		}
		if time.Now().Add(wait).After(deadline) {
			e.log.Warn("a blob another shard sends did not arrive: sending it from here", "digest", d.Digest, "repo", repo, "waited", limit)
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}
