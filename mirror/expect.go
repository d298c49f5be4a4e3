package mirror

import "github.com/airlock-mirror/airlock/mirror/endpoint"

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
