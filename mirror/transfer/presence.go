package transfer

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// presence asks a destination whether it holds a job's image. On a re-run
// with the last run's record (Options.Recorded), the images it left under
// their digest-derived tags are answered for by one tag listing per
// repository (tagListings); the rest are asked about as follows. On a re-run
// nearly every image is there, and one request under the job's first tag
// answers both questions the copy has (is the manifest there, does the tag
// name it): a tag can only name a manifest the registry holds, and a manifest
// is pushed only after everything it references. On a first run nearly none is
// there, and a tag that misses says nothing about the digest, which must then
// be asked for too. So the first tag is asked first while tags mostly hit, and
// the digest alone once they mostly miss (after a few misses: one request per
// image either way, plus at most missSlack plus the images already in flight).
//
// Once first tags mostly miss, a destination that can list tags
// (registry.Client.RepositoryKnown) is also asked, once per repository,
// whether it knows the repository at all: the images of a repository it does
// not know are not there, and are not asked about one by one. So a first run
// into a new destination costs one request per repository, not one per image
// and index child. A repository the listing calls unknown that holds untagged
// content (Distribution lists such a repository as unknown: an interrupted run
// that pushed blobs or children by digest only) costs requests, never bytes:
// its manifests are pushed again (the same bytes, idempotent) and its blobs
// are found held when their upload starts (endpoint.Uploader).
type presence struct {
	hits, misses atomic.Int64

	once  sync.Once
	repos *repoKnowledge // the destination's tag listing, once per repository

	lists *tagListings // a re-run's listings of the repositories (nil: none)

	mu       sync.Mutex
	newRepos map[string]bool // repositories the destination did not know when asked
}

// missSlack is how many more misses than hits the first tags may have before
// the digest is asked first.
const missSlack = 3

// check reports whether dst holds job's manifest, and whether job's first tag
// names it (tagged).
func (p *presence) check(ctx context.Context, dst manifestChecker, job Job) (held, tagged bool, err error) {
	if p.repoNew(ctx, dst, job.Dest) {
		return false, false, nil
	}
	answered, listed := p.lists.lookup(ctx, job)
	switch {
	case listed:
		p.hits.Add(1)
		return true, true, nil
	case answered:
		// The tag is gone: the manifest may be there still, untagged.
		p.misses.Add(1)
		if p.repoNew(ctx, dst, job.Dest) {
			return false, false, nil
		}
	}
	if len(job.Tags) > 0 && !answered && p.misses.Load() <= p.hits.Load()+missSlack {
		ok, err := dst.ManifestExists(ctx, job.Dest, job.Tags[0], job.Digest)
		if err != nil {
			return false, false, err
		}
		if ok {
			p.hits.Add(1)
			return true, true, nil
		}
		p.misses.Add(1)
		// That miss may be the one that makes the listing worth asking.
		if p.repoNew(ctx, dst, job.Dest) {
			return false, false, nil
		}
	}
	ok, err := dst.ManifestExists(ctx, job.Dest, job.Digest.String(), job.Digest)
	if err == nil {
		p.note(ok)
	}
	return ok, false, err
}

// note counts an answer to "does the destination hold this manifest" asked by
// digest: misses make the repository listing worth asking (repoNew).
func (p *presence) note(held bool) {
	if held {
		p.hits.Add(1)
	} else {
		p.misses.Add(1)
	}
}

// repoNew reports whether the destination did not know repo when the run first
// asked. It asks (once per repository) only while images are mostly found
// missing: a re-run, whose images are there, never asks.
func (p *presence) repoNew(ctx context.Context, dst manifestChecker, repo string) bool {
	if p.isNew(repo) {
		return true
	}
	l, ok := dst.(repoLister)
	if !ok || p.misses.Load() <= p.hits.Load()+missSlack {
		return false
	}
	p.once.Do(func() { p.repos = &repoKnowledge{dst: l, repos: map[string]*repoAnswer{}} })
	if p.repos.known(ctx, repo) {
		return false
	}
	p.markNew(repo)
	return true
}

// isNew reports whether repo was found new to the destination (asking nothing).
func (p *presence) isNew(repo string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.newRepos[repo]
}

// markNew records that the destination did not know repo when asked.
func (p *presence) markNew(repo string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.newRepos == nil {
		p.newRepos = map[string]bool{}
	}
	p.newRepos[repo] = true
}

// manifestChecker is the part of a destination presence asks.
type manifestChecker interface {
	ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error)
}

// expectRepos tells endpoints that can use it (endpoint.Expecter) which
// repositories the jobs read and write, before the first request.
func expectRepos(src endpoint.Source, dst endpoint.Destination, jobs []Job) {
	var from, to []string
	for _, j := range jobs {
		from, to = append(from, j.Source), append(to, j.Dest)
	}
	if ex, ok := src.(endpoint.Expecter); ok {
		ex.Expect(from, false)
	}
	if ex, ok := dst.(endpoint.Expecter); ok {
		ex.Expect(to, true)
	}
}
