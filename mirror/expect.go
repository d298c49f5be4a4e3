package mirror

import (
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// expect tells a resolver that can use it (endpoint.Expecter: a registry
// client sharing one token among repositories) which source repositories the
// plan reads.
func expect(resolve Resolver, images []PlanImage) {
	ex, ok := resolve.(endpoint.Expecter)
	if !ok {
		return
	}
	var repos []string
	for _, im := range images {
		if im.Error == "" && im.SourceRepo != "" {
			repos = append(repos, im.SourceRepo)
		}
	}
	ex.Expect(repos, false)
}

// prefetchPinned tells p (nil: nothing to do) which repositories the images
// read and write, and gives it the images pinned by digest, known before
// anything is resolved.
func prefetchPinned(p *transfer.Prefetch, images []PlanImage) {
	if p == nil {
		return
	}
	var jobs []transfer.Job
	for _, im := range images {
		if im.Error == "" && im.SourceRepo != "" && im.DestRepo != "" {
			jobs = append(jobs, im.Job())
		}
	}
	p.Expect(jobs)
	for _, j := range jobs {
		if j.Digest != "" {
			p.Add(j)
		}
	}
}
