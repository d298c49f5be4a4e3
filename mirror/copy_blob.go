package mirror

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

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
		from := e.mountCandidates(d.Digest, job.Dest, job.Source)
		if repo, ok := e.opts.Elsewhere[d.Digest]; ok && e.awaitElsewhere(ctx, repo, d) {
			if repo == job.Dest {
				// The other worker put it into this very repository.
				e.markPresent(d.Digest, job.Dest)
				e.blobsSkipped.Add(1)
				e.blobDone(d)
				return false, nil
			}
			from = append([]string{repo}, from...)
		}
		for _, from := range from {
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
// as one operation under the retry policy: a transfer that breaks, or whose
// content fails verification on either side, is restarted from a fresh source
// read (a read that breaks midway resumes with a Range request, as an attempt
// of the same operation).
func (e *copyEngine) transfer(ctx context.Context, srcRepo, dstRepo string, d endpoint.Descriptor) error {
	release, err := e.acquireHosts(ctx, repoHost(srcRepo), repoHost(dstRepo))
	if err != nil {
		return err
	}
	defer release()
	err = e.policy.do(ctx, e.log, "copy blob "+d.Digest.String()+" to "+dstRepo, func(ctx context.Context) error {
		return e.transferOnce(ctx, srcRepo, dstRepo, d)
	})
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
// (Registry.NoteFailure).
type failureNoter interface {
	NoteFailure(ctx context.Context, repo string, err error) error
}

func noteFailure(ctx context.Context, ep any, repo string, err error) error {
	if n, ok := ep.(failureNoter); ok {
		return n.NoteFailure(ctx, repo, err)
	}
	return err
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
