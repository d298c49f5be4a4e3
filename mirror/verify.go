package mirror

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Verifier judges a source image before it is copied (a signature policy,
// mirror/sigpolicy): nil, or the reason it is refused, naming the image.
type Verifier func(ctx context.Context, repo string, d digest.Digest) error

// Verify judges the source of every catalog of cats and every operator and
// additional image of the plan by v, parallel at a time, before anything is
// copied or looked for (call it before AddAttachments). An image v refuses
// fails with v's reason and is not copied; a catalog v refuses fails the run
// (everything else comes from it). Images from OCI layouts and catalogs that
// are folders have no registry signature and are not judged.
func (p *Plan) Verify(ctx context.Context, v Verifier, cats []CatalogRequest, parallel int) error {
	type job struct {
		repo string
		d    digest.Digest
		im   *PlanImage
	}
	var jobs []job
	for _, c := range cats {
		r, err := oci.ParseReference(c.Catalog)
		if err == nil && c.SourceDigest != "" && !location.IsLayout(c.Catalog) && !strings.HasPrefix(c.SourceRepo, LayoutRepoPrefix) {
			jobs = append(jobs, job{repo: r.Repository(), d: c.SourceDigest})
		}
	}
	for i := range p.Images {
		im := &p.Images[i]
		if im.Error == "" && im.Digest != "" && im.Kind.Content() && !strings.HasPrefix(im.SourceRepo, LayoutRepoPrefix) {
			jobs = append(jobs, job{repo: im.SourceRepo, d: im.Digest, im: im})
		}
	}
	errs := make([]error, len(jobs))
	if parallel <= 0 {
		parallel = 8
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for k, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[k] = v(ctx, j.repo, j.d)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for k, j := range jobs {
		switch {
		case errs[k] == nil:
		case j.im == nil:
			return fmt.Errorf("catalog: %w", errs[k])
		default:
			j.im.Error = errs[k].Error()
		}
	}
	return nil
}
