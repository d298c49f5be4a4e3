package workload

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// HeadManifests is the floor of a no-op re-run: it asks the registry
// o.Registry, once per tag of the workload, whether it holds that tag's
// manifest under prefix + "/" + its repository (HEAD by digest, the least a
// client that checks every image can send), o.Parallel at a time, and fails
// when one is missing. It returns the requests sent.
func (w *Workload) HeadManifests(ctx context.Context, o PushOptions, prefix string) (PushStats, error) {
	if o.Registry == "" {
		return PushStats{}, errors.New("head manifests: no registry: give HOST:PORT")
	}
	o.defaults()
	p := &pusher{o: o, base: o.Scheme + "://" + o.Registry}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Parallel)
	for _, t := range w.Tags {
		g.Go(func() error {
			repo := t.Repo
			if prefix != "" {
				repo = prefix + "/" + repo
			}
			ok, err := p.exists(gctx, "/v2/"+repo+"/manifests/"+t.Manifest.Digest.String(), t.Manifest.MediaType)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("head manifests: %s@%s is not in %s", repo, t.Manifest.Digest, o.Registry)
			}
			return nil
		})
	}
	err := g.Wait()
	return p.snapshot(), err
}
