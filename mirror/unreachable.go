package mirror

import "github.com/airlock-mirror/airlock/mirror/endpoint"

// FailHosts fails the images (not failed yet) whose source registry is a key
// of down, with its error: a registry found unreachable before the copy fails
// its images at once, and the copy of the others goes on.
func (p *Plan) FailHosts(down map[string]error) {
	for i := range p.Images {
		im := &p.Images[i]
		if err := down[endpoint.RepoHost(im.SourceRepo)]; err != nil && im.Error == "" {
			im.Error = err.Error()
		}
	}
}
