package transfer

import (
	"context"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// destHolds reports whether the destination holds manifest rd (by digest),
// asking at most once per run. Manifests it already holds are queued for
// discoverPresent, which reads them only if a blob needs a repository to be
// mounted from.
func (e *copyEngine) destHolds(ctx context.Context, rd repoDigest) (bool, error) {
	e.mu.Lock()
	v, ok := e.holds[rd]
	e.mu.Unlock()
	if ok {
		return v, nil
	}
	if e.presence.repoNew(ctx, e.dst, rd.repo) {
		// The destination did not know the repository: nothing in it was
		// there before this run (what this run pushes, it knows).
		e.setHolds(rd, false)
		return false, nil
	}
	held, err := e.dst.ManifestExists(ctx, rd.repo, rd.d.String(), rd.d)
	if err != nil {
		return false, err
	}
	e.presence.note(held)
	e.setHolds(rd, held)
	return held, nil
}

// setHolds records what the destination said about manifest rd (the first
// answer stays).
func (e *copyEngine) setHolds(rd repoDigest, held bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.holds[rd]; !ok {
		e.holds[rd] = held
		e.heldSeen = e.heldSeen || held
		if held {
			h := endpoint.RepoHost(rd.repo)
			e.toWalk[h] = append(e.toWalk[h], rd)
		}
	}
}

// askPresence asks the destination about job's image unless the run knows
// already (see presence): a re-run learns with one request that the image is
// there and that its first tag names it.
// One question at a time per job (a Prefetch and Copy may both ask); a
// failed one is asked again by the next caller.
func (e *copyEngine) askPresence(ctx context.Context, job Job) error {
	rd := repoDigest{job.Dest, job.Digest}
	_, _, err := e.flight(ctx, e.asks, job.Key(), true, func() (bool, error) {
		e.mu.Lock()
		_, known := e.holds[rd]
		e.mu.Unlock()
		if known {
			return false, nil
		}
		held, tagged, err := e.presence.check(ctx, e.dst, job)
		if err != nil {
			return false, err
		}
		e.setHolds(rd, held)
		if tagged {
			e.mu.Lock()
			e.tagged[job.Dest+":"+job.Tags[0]] = job.Digest
			e.mu.Unlock()
		}
		return false, nil
	})
	return err
}

// taggedSo reports whether the destination was found to tag repo:tag as d.
func (e *copyEngine) taggedSo(repo, tag string, d digest.Digest) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tagged[repo+":"+tag] == d
}

// discoverBatch is how many images discoverPresent asks the destination about at
// once.
const discoverBatch = 16

// discoverPresent looks for blob d on host among the manifests the destination
// already holds: first those this run found there, then the images of the run
// not looked at yet (asking the destination whether it holds each, once). It
// stops as soon as a repository on host is known to hold d. Each manifest is
// read at most once per run. So a blob an earlier run put in another repository
// is mounted, never sent again, whatever order the images are processed in,
// unless the destination held none of the first images asked about
// (foundEmpty: a new mirror), when only the images it is found to hold are
// read. It needs a destination that can also be read (a registry); others
// have nothing to find.
func (e *copyEngine) discoverPresent(ctx context.Context, d digest.Digest, host string) {
	rd, ok := e.dst.(endpoint.Source)
	if !ok {
		return
	}
	e.walkMu.Lock()
	defer e.walkMu.Unlock()
	for !e.presentOn(d, host) && ctx.Err() == nil {
		e.mu.Lock()
		var next repoDigest
		found := false
		for q := e.toWalk[host]; len(q) > 0 && !found; q = e.toWalk[host] {
			next, e.toWalk[host] = q[0], q[1:]
			found = !e.walked[next]
			e.walked[next] = true
		}
		var batch []Job
		if !found && !e.foundEmpty() {
			for e.jobCursor < len(e.jobs) && len(batch) < discoverBatch {
				if j := e.jobs[e.jobCursor]; endpoint.RepoHost(j.Dest) == host {
					batch = append(batch, j)
				}
				e.jobCursor++
			}
		}
		e.mu.Unlock()
		switch {
		case found:
			m, err := rd.Manifest(ctx, next.repo, next.d.String())
			if err != nil {
				e.log.Debug("cannot read a destination manifest to find mountable blobs", "repo", next.repo, "digest", next.d, "error", err)
				continue
			}
			refs, err := oci.Parse(m)
			if err != nil {
				continue
			}
			for _, b := range refs.Blobs {
				e.markPresent(b.Digest, next.repo)
			}
			e.mu.Lock()
			for _, c := range refs.Manifests {
				e.toWalk[host] = append(e.toWalk[host], repoDigest{next.repo, c.Digest})
			}
			e.mu.Unlock()
		case len(batch) > 0:
			var g errgroup.Group
			for _, j := range batch {
				g.Go(func() error {
					if _, err := e.destHolds(ctx, repoDigest{j.Dest, j.Digest}); err != nil {
						e.log.Debug("cannot check a destination manifest to find mountable blobs", "repo", j.Dest, "digest", j.Digest, "error", err)
					}
					return nil
				})
			}
			_ = g.Wait()
		default:
			return
		}
	}
}

// foundEmpty tells that the destination held none of the first discoverBatch
// or more images the run asked it about (a first run into a new mirror): then
// asking it about more images to find blobs to mount would only delay the
// first blobs (on loopback about 100 ms before the first byte; a round trip
// per batch of images over a WAN). Images it does hold, asked about by the
// copy, are still walked. e.mu is held.
func (e *copyEngine) foundEmpty() bool {
	return !e.heldSeen && len(e.holds) >= discoverBatch
}

// readManifest reads manifest d of job. One the destination holds (held) is
// read there: its bytes are the source's, since a manifest is its digest, and
// they are checked against d here and again by the caller, so a re-run that
// needs a held manifest (an index rechecked for a platform subset, a tag put
// back) costs the source no request, and an image pinned by digest costs the
// source nothing while the destination holds it. Otherwise, or when the
// destination cannot be read or answers with other bytes, it is read from the
// source.
func (e *copyEngine) readManifest(ctx context.Context, job Job, d digest.Digest, held bool) (endpoint.Manifest, error) {
	if rd, ok := e.dst.(endpoint.Source); ok && held {
		m, err := rd.Manifest(ctx, job.Dest, d.String())
		if err == nil && digest.FromBytes(m.Raw) == d {
			if m.Digest == "" {
				m.Digest = d
			}
			return m, nil
		}
		e.log.Debug("cannot read a held manifest at the destination: reading it from the source", "repo", job.Dest, "digest", d, "error", err)
	}
	return e.src.Manifest(ctx, job.Source, d.String())
}
