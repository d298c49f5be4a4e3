package transfer

import (
	"context"
	"fmt"
	"sync"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// EstimateSource is what a dry run reads manifests from.
type EstimateSource interface {
	Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error)
}

// EstimateDestination is what a dry run asks what it already holds.
type EstimateDestination interface {
	BlobExists(ctx context.Context, repo string, d endpoint.Descriptor) (bool, error)
	ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error)
}

// Estimate is what a dry run found: the jobs whose manifest the destination
// lacks, and the bytes of the distinct blobs it would send.
type Estimate struct {
	Images       int   `json:"images"`
	Missing      []Job `json:"missing"`
	Blobs        int   `json:"blobs"`
	MissingBlobs int   `json:"missingBlobs"`
	// Bytes is the total size of the distinct blobs of every image.
	Bytes int64 `json:"bytes"`
	// BytesToSend is the total size of the distinct blobs the destination lacks.
	BytesToSend int64 `json:"bytesToSend"`
	// Errors are images whose manifests could not be read.
	Errors []string `json:"errors,omitempty"`
	// Unreadable maps each job whose manifests could not be read ("DEST@DIGEST",
	// as Job.Key) to the error.
	Unreadable map[string]string `json:"-"`
}

// EstimatePlan walks every job's manifests at src (children of indexes
// included), checks which manifests and blobs dst already holds, and sums what
// would be sent, each distinct blob once. It reads manifests only, never blobs.
// progress, when not nil, is told how many jobs were looked at.
func EstimatePlan(ctx context.Context, src EstimateSource, dst EstimateDestination, jobs []Job, parallel int, progress StageProgress) (*Estimate, error) {
	return NewEstimator(src, dst, parallel).Estimate(ctx, jobs, progress)
}

// Estimator is EstimatePlan in two steps, so that most of a dry run can start
// before the whole plan is known: Look reads the jobs known so far (each job's
// manifest at the destination, its manifests at the source), Estimate the rest
// and then the blobs, for the whole plan. Look and Estimate may run at the same
// time (Estimate waits for what Look is reading).
type Estimator struct {
	src      EstimateSource
	dst      EstimateDestination
	parallel int
	mu       sync.Mutex
	looked   map[string]*jobLook
}

// jobLook is what one job's look found; done is closed once it is filled.
type jobLook struct {
	done    chan struct{}
	present bool
	blobs   []endpoint.Descriptor
	err     error
}

// NewEstimator returns an Estimator reading manifests from src and asking dst,
// parallel requests at once (8 when 0).
func NewEstimator(src EstimateSource, dst EstimateDestination, parallel int) *Estimator {
	if parallel <= 0 {
		parallel = 8
	}
	return &Estimator{src: src, dst: dst, parallel: parallel, looked: map[string]*jobLook{}}
}

func lookKey(j Job) string { return j.Source + "|" + j.Key() }

// Look reads the jobs not looked at yet, parallel at once, and returns when
// they are done or ctx ends. progress (may be nil) counts each job of jobs as
// it is done, those looked at before at once.
func (x *Estimator) Look(ctx context.Context, jobs []Job, progress StageProgress) {
	count := NewCounter(progress, len(jobs))
	var g errgroup.Group
	g.SetLimit(x.parallel)
	for _, j := range jobs {
		k := lookKey(j)
		x.mu.Lock()
		l, seen := x.looked[k]
		if !seen {
			l = &jobLook{done: make(chan struct{})}
			x.looked[k] = l
		}
		x.mu.Unlock()
		if seen {
			g.Go(func() error {
				select {
				case <-l.done:
					count.Add(l.err != nil)
				case <-ctx.Done():
				}
				return nil
			})
			continue
		}
		g.Go(func() error {
			defer close(l.done)
			ok, err := x.dst.ManifestExists(ctx, j.Dest, j.Digest.String(), j.Digest)
			l.present = err == nil && ok
			l.blobs, l.err = walkBlobs(ctx, x.src, j, j.Digest, 0, nil)
			count.Add(l.err != nil)
			return nil
		})
	}
	g.Wait()
}

// Estimate looks at the jobs not looked at yet, then checks the blobs of all of
// jobs (the whole plan, in plan order) and sums what would be sent.
func (x *Estimator) Estimate(ctx context.Context, jobs []Job, progress StageProgress) (*Estimate, error) {
	x.Look(ctx, jobs, progress)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	est := &Estimate{Images: len(jobs)}
	present := make([]bool, len(jobs))
	blobsOf := make([][]endpoint.Descriptor, len(jobs))
	errs := make([]error, len(jobs))
	x.mu.Lock()
	for i, j := range jobs {
		l := x.looked[lookKey(j)]
		present[i], blobsOf[i], errs[i] = l.present, l.blobs, l.err
	}
	x.mu.Unlock()
	dst := x.dst
	var g errgroup.Group
	g.SetLimit(x.parallel)

	// Each distinct blob once, in plan order. A blob of a manifest the
	// destination holds is there (a registry accepts a manifest only with its
	// blobs). Any other is checked in the first repository, among those of the
	// jobs naming it, that the destination may hold something in: one that
	// holds one of the plan's manifests, or one its tag listing does not call
	// unknown (see repoKnowledge).
	type blobCheck struct {
		desc  endpoint.Descriptor
		held  bool
		repos []string
	}
	var checks []*blobCheck
	byDigest := map[digest.Digest]*blobCheck{}
	holds := map[string]bool{} // repositories holding one of the plan's manifests
	for i, j := range jobs {
		if present[i] {
			holds[j.Dest] = true
		}
	}
	for i, j := range jobs {
		if !present[i] {
			est.Missing = append(est.Missing, j)
		}
		if errs[i] != nil {
			est.Errors = append(est.Errors, fmt.Sprintf("%s@%s: %v", j.Source, j.Digest, errs[i]))
			if !present[i] { // the copy would fail on it
				if est.Unreadable == nil {
					est.Unreadable = map[string]string{}
				}
				est.Unreadable[j.Key()] = errs[i].Error() // names the manifest and the cause
			}
		}
		for _, b := range blobsOf[i] {
			c := byDigest[b.Digest]
			if c == nil {
				c = &blobCheck{desc: b}
				byDigest[b.Digest] = c
				checks = append(checks, c)
				est.Blobs++
				est.Bytes += b.Size
			}
			c.held = c.held || present[i]
			if len(c.repos) == 0 || c.repos[len(c.repos)-1] != j.Dest {
				c.repos = append(c.repos, j.Dest)
			}
		}
	}
	repos := newRepoKnowledge(dst, holds)
	var mu sync.Mutex
	for _, c := range checks {
		if c.held {
			continue
		}
		g.Go(func() error {
			for _, repo := range c.repos {
				if !repos.known(ctx, repo) {
					continue
				}
				if ok, err := dst.BlobExists(ctx, repo, c.desc); err == nil && ok {
					return nil
				}
				break
			}
			mu.Lock()
			est.MissingBlobs++
			est.BytesToSend += c.desc.Size
			mu.Unlock()
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return est, nil
}

// repoLister is implemented by destinations that can tell a repository they
// do not know (registry.Client.RepositoryKnown).
type repoLister interface {
	RepositoryKnown(ctx context.Context, repo string) (bool, error)
}

// repoKnowledge tells whether a destination repository may hold blobs: yes
// when it holds one of the plan's manifests, else what the destination's tag
// listing says, asked once per repository (an error counts as yes). A
// repository the listing calls unknown is taken to hold no blob: Distribution
// also calls unknown a repository with untagged content only, whose manifests
// the plan would have found (they are checked one by one), so what is missed
// is blobs a run uploaded there before it was interrupted, before any
// manifest: the estimate then counts them as still to send.
type repoKnowledge struct {
	dst   repoLister // nil: every repository counts as known
	holds map[string]bool
	mu    sync.Mutex
	repos map[string]*repoAnswer
}

type repoAnswer struct {
	once  sync.Once
	known bool
}

func newRepoKnowledge(dst EstimateDestination, holds map[string]bool) *repoKnowledge {
	l, _ := dst.(repoLister)
	return &repoKnowledge{dst: l, holds: holds, repos: map[string]*repoAnswer{}}
}

// known reports whether repo may hold blobs.
func (k *repoKnowledge) known(ctx context.Context, repo string) bool {
	if k.dst == nil || k.holds[repo] {
		return true
	}
	k.mu.Lock()
	a := k.repos[repo]
	if a == nil {
		a = &repoAnswer{}
		k.repos[repo] = a
	}
	k.mu.Unlock()
	a.once.Do(func() {
		ok, err := k.dst.RepositoryKnown(ctx, repo)
		a.known = ok || err != nil
	})
	return a.known
}

// walkBlobs lists the blobs (configs, layers, and child manifests as blobs of
// their own size) of the manifest d in job's source repository: of an index,
// only the children of the job's platform subset.
// The manifests read on the way (d and its children) are appended to mans
// when it is not nil.
func walkBlobs(ctx context.Context, src EstimateSource, job Job, d digest.Digest, depth int, mans *[]endpoint.Descriptor) ([]endpoint.Descriptor, error) {
	if depth > 4 {
		return nil, fmt.Errorf("manifest %s nests indexes too deeply", d)
	}
	m, err := src.Manifest(ctx, job.Source, d.String())
	if err != nil {
		return nil, err
	}
	if mans != nil {
		mt := m.MediaType
		if mt == "" {
			mt = oci.MediaTypeOf("", m.Raw)
		}
		*mans = append(*mans, endpoint.Descriptor{MediaType: mt, Digest: d, Size: int64(len(m.Raw))})
	}
	refs, err := oci.Parse(m)
	if err != nil {
		return nil, err
	}
	children, err := subset(job, d, refs.Manifests)
	if err != nil {
		return nil, err
	}
	out := append([]endpoint.Descriptor(nil), refs.Blobs...)
	for _, c := range children {
		sub, err := walkBlobs(ctx, src, job, c.Digest, depth+1, mans)
		if err != nil {
			return out, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// Sizes are the totals of a plan's jobs, read from their manifests before
// anything is copied, so that progress can be measured against the whole.
type Sizes struct {
	Images int   `json:"images"`
	Blobs  int   `json:"blobs"`
	Bytes  int64 `json:"bytes"`
	// PerJob are the blobs each job's manifests reference (children of indexes
	// included), by job index; nil for a job whose manifest could not be read or
	// that the destination already holds.
	PerJob [][]endpoint.Descriptor `json:"-"`
	// Manifests are, by job index as PerJob, the manifests read to list them
	// (the job's, and the children of an index kept), each as a blob of its
	// own size.
	Manifests [][]endpoint.Descriptor `json:"-"`
	// Held says, by job index, what the destination already holds of the job;
	// nil when Measure was given no destination.
	Held []Held `json:"-"`
}

// Held is what a destination was found to hold of a job (Sizes.Held,
// Options.Held): the manifest (by digest), and whether the job's first tag
// names it.
type Held struct {
	Manifest, FirstTag bool
	// NewRepo: the destination did not know the job's repository when asked
	// (see presence): nothing in it is asked about again.
	NewRepo bool
}

// Measure walks the manifests at src of every job the destination does not hold
// yet and sums the distinct blobs, each once. It reads manifests only. dst, when
// not nil, is asked first (one manifest check per job: under its first tag while
// tags mostly name what they should, else by digest; see presence): a job it
// already holds is not read at the source at all (a no-op re-run reads nothing
// there) and is marked in Held, so the copy engine need not ask again
// (Options.Held). A job whose manifests cannot be read counts with no blobs
// (the copy reports the error). progress, when not nil, is told how many jobs
// were looked at.
func Measure(ctx context.Context, src EstimateSource, dst EstimateDestination, jobs []Job, parallel int, progress StageProgress) (*Sizes, error) {
	if parallel <= 0 {
		parallel = 8
	}
	s := &Sizes{Images: len(jobs), PerJob: make([][]endpoint.Descriptor, len(jobs)), Manifests: make([][]endpoint.Descriptor, len(jobs))}
	if dst != nil {
		s.Held = make([]Held, len(jobs))
	}
	var pr presence
	count := NewCounter(progress, len(jobs))
	var g errgroup.Group
	g.SetLimit(parallel)
	for i, j := range jobs {
		g.Go(func() error {
			if dst != nil {
				if ok, tagged, err := pr.check(ctx, dst, j); err == nil && ok {
					s.Held[i] = Held{Manifest: true, FirstTag: tagged}
					count.Add(false)
					return nil
				}
			}
			var mans []endpoint.Descriptor
			blobs, err := walkBlobs(ctx, src, j, j.Digest, 0, &mans)
			if err == nil {
				s.PerJob[i], s.Manifests[i] = blobs, mans
			}
			count.Add(err != nil)
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, j := range jobs {
		if dst != nil && pr.isNew(j.Dest) {
			s.Held[i].NewRepo = true
		}
	}
	seen := map[digest.Digest]bool{}
	for _, blobs := range s.PerJob {
		for _, b := range blobs {
			if !seen[b.Digest] {
				seen[b.Digest] = true
				s.Blobs++
				s.Bytes += b.Size
			}
		}
	}
	return s, nil
}
