package transfer

import (
	"context"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// tagListings answers, on a re-run, whether the destination still holds the
// images the last run left there under their digest-derived tags
// (Options.Recorded), with one tag listing per repository instead of a
// manifest request per image. Such a tag names its digest ("sha256-<hex>"
// for sha256:<hex>), a registry lists a tag only while it names a manifest
// it holds, a manifest is pushed only after everything it references, and
// the last run verified the tag at that digest: so a listed tag says the
// image is there, and an image deleted from the mirror (its manifest, or
// its tag) is absent from the listing and copied again. What is assumed is
// that nobody pushed other content under such a tag since the last run.
// Tags named otherwise (v1.2, latest) may move: they are asked about one by
// one, as ever.
type tagListings struct {
	dst endpoint.TagLister
	rec map[string]map[string]digest.Digest

	mu    sync.Mutex
	repos map[string]*tagListing
	slots chan struct{} // the listings warm runs at once
}

// tagListing is one repository's listing, asked at most once per run.
type tagListing struct {
	once     sync.Once
	pinned   int             // the record's digest-tagged images in the repository
	tags     map[string]bool // nil: not listed (too few images, or the listing failed)
	complete bool            // tags is every tag of the repository
	warmed   bool            // warm began it (under tagListings.mu)
}

// maxListPages bounds one repository's listing (of up to 1,000 tags a page):
// a repository with more tags is listed in part, and the images whose tags
// that part does not show are asked about one by one.
const maxListPages = 5

// newTagListings is nil (every image asked about) without a record or a
// destination that can list tags.
func newTagListings(dst endpoint.Destination, rec map[string]map[string]digest.Digest) *tagListings {
	l, ok := dst.(endpoint.TagLister)
	if !ok || len(rec) == 0 {
		return nil
	}
	return &tagListings{dst: l, rec: rec, repos: map[string]*tagListing{}}
}

// lookup reports whether a listing of job's repository answers for job
// (answered), and then whether it shows job's first tag (listed). It lists
// the repository the first time an image of it asks (unless warm began it).
func (t *tagListings) lookup(ctx context.Context, job Job) (answered, listed bool) {
	rl := t.listing(job)
	if rl == nil {
		return false, false
	}
	rl.list(ctx, t.dst, job.Dest)
	switch {
	case rl.tags == nil:
		return false, false
	case rl.tags[job.Tags[0]]:
		return true, true
	}
	return rl.complete, false
}

// warmListings bounds the listings warm runs at once.
const warmListings = 16

// warm returns a function that lists job's repository if a listing would
// answer for job and nobody began it yet (nil otherwise), so that the
// listings of a re-run are asked side by side as soon as its images are
// known, instead of one repository at a time as the images of each are
// asked about (a repository's images come one after the other: the images
// asked about at once wait for the same listing). The function runs at most
// warmListings listings at once; the caller runs it in the background and
// waits for it before it ends. lookup waits for a listing begun so.
func (t *tagListings) warm(job Job) func(ctx context.Context) {
	rl := t.listing(job)
	if rl == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if rl.warmed {
		return nil
	}
	rl.warmed = true
	if t.slots == nil {
		t.slots = make(chan struct{}, warmListings)
	}
	return func(ctx context.Context) {
		select {
		case t.slots <- struct{}{}:
		case <-ctx.Done():
			return // lookup lists it, if still asked
		}
		defer func() { <-t.slots }()
		rl.list(ctx, t.dst, job.Dest)
	}
}

// listing is the listing of job's repository when one would answer for job
// (its first tag digest-derived, recorded at its digest, the repository
// holding at least two such images); nil otherwise.
func (t *tagListings) listing(job Job) *tagListing {
	if t == nil || len(job.Tags) == 0 {
		return nil
	}
	tag := job.Tags[0]
	if tag != oci.DigestTag(job.Digest) || t.rec[job.Dest][tag] != job.Digest {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rl := t.repos[job.Dest]
	if rl == nil {
		rl = &tagListing{}
		for tg, d := range t.rec[job.Dest] {
			if tg == oci.DigestTag(d) {
				rl.pinned++
			}
		}
		t.repos[job.Dest] = rl
	}
	if rl.pinned < 2 {
		return nil // one image: its own request costs no more than a listing
	}
	return rl
}

// list lists repo once (later calls wait for the first one's answer).
func (rl *tagListing) list(ctx context.Context, dst endpoint.TagLister, repo string) {
	rl.once.Do(func() {
		tags, complete, err := dst.TagsUpTo(ctx, repo, min(maxListPages, rl.pinned-1))
		if err != nil {
			return // asked about image by image
		}
		rl.tags, rl.complete = make(map[string]bool, len(tags)), complete
		for _, tg := range tags {
			rl.tags[tg] = true
		}
	})
}

// WithRecord returns dst answering Measure as Copy with Options.Recorded
// rec would: whether it holds an image the record lists under its
// digest-derived tag is read from one tag listing of its repository. A
// destination that cannot list tags, or no record, gives dst itself.
func WithRecord(dst EstimateDestination, rec map[string]map[string]digest.Digest) EstimateDestination {
	d, ok := dst.(endpoint.Destination)
	if !ok {
		return dst
	}
	l := newTagListings(d, rec)
	if l == nil {
		return dst
	}
	return recordedDestination{dst, l}
}

type recordedDestination struct {
	EstimateDestination
	lists *tagListings
}

// ManifestExists answers for a digest-derived tag of the record from the
// listing (a tag it lacks is not there), else asks the destination.
func (r recordedDestination) ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error) {
	if answered, listed := r.lists.lookup(ctx, Job{Dest: repo, Digest: d, Tags: []string{reference}}); answered {
		return listed, nil
	}
	return r.EstimateDestination.ManifestExists(ctx, repo, reference, d)
}

// RepositoryKnown is the destination's (see repoLister); one that cannot
// tell knows every repository.
func (r recordedDestination) RepositoryKnown(ctx context.Context, repo string) (bool, error) {
	if l, ok := r.EstimateDestination.(repoLister); ok {
		return l.RepositoryKnown(ctx, repo)
	}
	return true, nil
}
