package transfer

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// gatheringLister is the destination's registry client whose tag listings
// wait (up to a deadline) until want of them are in flight at once, and
// remember the most that were.
type gatheringLister struct {
	*registry.Client
	want int

	mu             sync.Mutex
	inFlight, most int
	all            chan struct{} // closed once want were in flight at once
}

func (g *gatheringLister) TagsUpTo(ctx context.Context, repo string, pages int) ([]string, bool, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.want {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-time.After(2 * time.Second):
	}
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	return g.Client.TagsUpTo(ctx, repo, pages)
}

// A re-run's prefetch lists the repositories of the images it is given side
// by side as soon as it is given them, not one repository at a time as the
// images are asked about: with one image at a time, the four repositories'
// listings are still in flight together. The answers are the same: one
// listing per repository, nothing copied.
func TestPrefetchListsRepositoriesSideBySide(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	pinned, single, named := pinnedWorkload(t, src, dst)
	jobs := append(append([]Job(nil), pinned...), single, named)
	src.Reset()
	dst.Reset()
	g := &gatheringLister{Client: testRegistry(), want: 4, all: make(chan struct{})}
	opts := Options{Retry: mirrortest.FastRetry, ParallelImages: 1, Recorded: recordOf(jobs)}
	p := NewPrefetch(ctx, testRegistry(), g, opts)
	for _, j := range jobs {
		p.Add(j)
	}
	rep, err := p.Copy(ctx, jobs, opts)
	p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range rep.Images {
		if im.Status != StatusSkipped {
			t.Errorf("%s: %s, want skipped", im.Job.Key(), im.Status)
		}
	}
	if g.most < g.want {
		t.Errorf("at most %d tag listings in flight at once, want the %d repositories' side by side", g.most, g.want)
	}
	c := dst.Counts()
	if c.ByPath["GET tags"] != 4 || c.ManifestHEAD != 2 || c.ManifestGET != 0 {
		t.Errorf("%d tag listings, %d manifest HEADs, %d GETs: want 4, 2 (the single pinned image and the named one), none (%v)", c.ByPath["GET tags"], c.ManifestHEAD, c.ManifestGET, c.ByPath)
	}
}

// memoryLister answers tag listings from the record (every recorded tag is
// there), without a request, counting each repository's listings and the most
// goroutines alive while one runs.
type memoryLister struct {
	*registry.Client
	rec map[string]map[string]digest.Digest

	mu         sync.Mutex
	listed     map[string]int
	goroutines int // the most runtime.NumGoroutine while listing
}

func (m *memoryLister) TagsUpTo(_ context.Context, repo string, _ int) ([]string, bool, error) {
	m.mu.Lock()
	m.listed[repo]++
	m.goroutines = max(m.goroutines, runtime.NumGoroutine())
	m.mu.Unlock()
	time.Sleep(time.Millisecond)
	var tags []string
	for t := range m.rec[repo] {
		tags = append(tags, t)
	}
	return tags, true, nil
}

// A re-run's prefetch given the images of many repositories lists each
// repository once, with a bounded number of goroutines (not one per
// repository waiting for its turn), and finds every image there.
func TestPrefetchListsManyRepositoriesWithFewGoroutines(t *testing.T) {
	const repos = 200
	var jobs []Job
	for i := range repos {
		for k := range 2 {
			d := digest.FromString(fmt.Sprintf("image %d %d", i, k))
			jobs = append(jobs, Job{Source: fmt.Sprintf("src.invalid/ns/r%d", i), Dest: fmt.Sprintf("dst.invalid/ns/r%d", i), Digest: d, Tags: []string{oci.DigestTag(d)}})
		}
	}
	rec := recordOf(jobs)
	m := &memoryLister{Client: testRegistry(), rec: rec, listed: map[string]int{}}
	before := runtime.NumGoroutine()
	opts := Options{Retry: mirrortest.FastRetry, ParallelImages: 4, Recorded: rec}
	p := NewPrefetch(context.Background(), testRegistry(), m, opts)
	for _, j := range jobs {
		p.Add(j)
	}
	p.wg.Wait()
	p.Stop()
	if len(m.listed) != repos {
		t.Errorf("%d repositories listed, want %d", len(m.listed), repos)
	}
	for r, n := range m.listed {
		if n != 1 {
			t.Errorf("%s listed %d times, want once", r, n)
		}
	}
	// warmListings listers and ParallelImages workers, plus a margin for
	// the runtime's and the test framework's.
	if most := before + warmListings + opts.ParallelImages + 8; m.goroutines > most {
		t.Errorf("%d goroutines while listing (%d before), want at most %d", m.goroutines, before, most)
	}
	for _, j := range jobs {
		if held, _ := p.e.destHolds(context.Background(), repoDigest{j.Dest, j.Digest}); !held {
			t.Errorf("%s@%s not found held", j.Dest, j.Digest)
		}
	}
}
