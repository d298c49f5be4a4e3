package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// ShardInfo describes what a shard run (--plan FILE --shard I/N) was given.
type ShardInfo struct {
	Index int `json:"index"`
	Of    int `json:"of"`
	// Images is the number of images of the shard; Bytes the size of the
	// distinct blobs it sends (those other shards send are mounted).
	Images int   `json:"images"`
	Bytes  int64 `json:"bytes"`
	// UniqueBytes is the size of the distinct blobs of the whole plan.
	UniqueBytes int64 `json:"uniqueBytes"`
	// WaitsFor counts blobs another shard sends that this one mounts.
	WaitsFor int `json:"waitsFor,omitempty"`
}

// loadPlanFor reads --plan and checks it was made for this run's workflow and
// destination.
func (r *run) loadPlanFor() (*mirror.Plan, error) {
	p, err := mirror.LoadPlan(r.opts.Run.PlanFile)
	if err != nil {
		return nil, err
	}
	if p.Workflow != r.workflow {
		return nil, fmt.Errorf("plan %s is a %s plan; this run is %s: use the same destination as --plan-only did", r.opts.Run.PlanFile, p.Workflow, r.workflow)
	}
	if r.workflow == mirror.MirrorToMirror && strings.TrimSuffix(p.Destination, "/") != strings.TrimSuffix(r.dest, "/") {
		return nil, fmt.Errorf("plan %s was made for %s, not %s: make the plan again for this destination", r.opts.Run.PlanFile, location.Docker(p.Destination), location.Docker(r.dest))
	}
	return p, nil
}

// recordBlobs reads the manifests of every shardable image of the plan and
// records their blobs in it, for --plan-only.
func (r *run) recordBlobs(ctx context.Context, src transfer.EstimateSource) error {
	r.stage("measure")
	p := r.res.Plan
	var idx []int
	var jobs []transfer.Job
	for i, im := range p.Images {
		if !mirror.Shardable(im) {
			continue
		}
		idx = append(idx, i)
		jobs = append(jobs, im.Job())
	}
	s, err := transfer.Measure(ctx, src, nil, jobs, 16, r.stageProgress("measure"))
	if err != nil {
		return err
	}
	for k, i := range idx {
		if s.PerJob[k] == nil {
			p.Images[i].Error = "could not read its manifests to plan the shards"
			continue
		}
		blobs := make([]mirror.PlanBlob, 0, len(s.PerJob[k]))
		for _, b := range s.PerJob[k] {
			blobs = append(blobs, mirror.PlanBlob{Digest: b.Digest, Size: b.Size})
		}
		p.Images[i].Blobs = blobs
	}
	return r.writePlan(ctx)
}

// shard copies one shard of the plan --plan names.
func (r *run) shard(ctx context.Context) error {
	p, err := r.loadPlanFor()
	if err != nil {
		return err
	}
	part, err := mirror.PartitionPlan(p, r.opts.Run.Shards)
	if err != nil {
		return fmt.Errorf("plan %s: %w", r.opts.Run.PlanFile, err)
	}
	sh := part.Shards[r.opts.Run.Shard]
	sub := &mirror.Plan{Workflow: p.Workflow, Destination: p.Destination}
	for _, i := range sh.Images {
		sub.Images = append(sub.Images, p.Images[i])
	}
	r.res.Shard = &ShardInfo{Index: r.opts.Run.Shard, Of: r.opts.Run.Shards, Images: len(sh.Images), Bytes: sh.Bytes,
		UniqueBytes: part.UniqueBytes, WaitsFor: len(sh.Elsewhere)}
	r.log.Info("shard", "index", r.opts.Run.Shard, "of", r.opts.Run.Shards, "images", len(sh.Images), "bytes", sh.Bytes, "waitsFor", len(sh.Elsewhere))
	r.setPlan(sub)
	if err := r.writePlan(ctx); err != nil {
		return err
	}
	src := &mirror.SourceMux{Default: r.srcRegistry()}
	if r.workflow == mirror.MirrorToDisk {
		return r.diskShard(ctx, src, sh)
	}
	_, err = r.copyJobs(ctx, src, r.destRegistry(), sub.Jobs(), sh.Elsewhere)
	return err
}

// finish checks every image of the plan is at the destination, then pushes the
// catalogs (rebuilt again from the same configuration, and refused unless they
// come out as the plan recorded them) and writes the cluster resources.
func (r *run) finish(ctx context.Context) error {
	p, err := r.loadPlanFor()
	if err != nil {
		return err
	}
	// What the sources build themselves (the catalogs) is built again.
	sel, err := r.selectAll(ctx)
	if err != nil {
		return err
	}
	if err := sel.finish(false); err != nil {
		return err
	}
	if err := matchCatalogs(p, sel.catalogs(), r.opts.Run.PlanFile); err != nil {
		return err
	}
	r.setPlan(p)
	if err := r.writePlan(ctx); err != nil {
		return err
	}
	if r.workflow == mirror.MirrorToDisk {
		return r.diskFinish(ctx)
	}
	dst := r.destRegistry()
	r.stage("verify")
	missing, err := r.missingAt(ctx, p, dst)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return r.missingError(missing, "are not at the destination yet, so no catalog was pushed")
	}
	var jobs []transfer.Job
	for _, im := range p.Images {
		if im.Kind == mirror.KindCatalog && im.Error == "" {
			jobs = append(jobs, im.Job())
		}
	}
	rep, err := r.copyJobs(ctx, &mirror.SourceMux{Default: r.srcRegistry()}, dst, jobs, nil)
	if err != nil {
		return err
	}
	for _, im := range p.Images {
		if mirror.Shardable(im) {
			// Verified at the destination above.
			rep.Images = append(rep.Images, transfer.ImageResult{Job: im.Job(), Status: transfer.StatusSkipped})
		}
	}
	r.setCopy(rep)
	if werr := p.PublishReferrers(ctx, dst, nil); werr != nil { // the shards copied them (checked above)
		r.log.Warn(werr.Error())
		r.res.Warnings = append(r.res.Warnings, werr.Error())
	}
	return r.clusterResources()
}

// matchCatalogs checks that the catalogs this run fetched and rebuilt are the
// plan's (same digests), and points the plan's catalog images at this run's
// copies of them.
func matchCatalogs(p *mirror.Plan, cats []mirror.CatalogRequest, planFile string) error {
	got := map[string]mirror.CatalogRequest{}
	for _, c := range cats {
		got[c.Catalog] = c
	}
	planned := map[string]bool{}
	for _, pc := range p.Catalogs {
		planned[pc.Catalog] = true
		c, ok := got[pc.Catalog]
		if !ok {
			return fmt.Errorf("plan %s has catalog %s, which the configuration does not name: use the configuration the plan was made with", planFile, pc.Catalog)
		}
		d, repo := c.SourceDigest, c.SourceRepo
		if c.Rebuilt != nil {
			d, repo = c.Rebuilt.Digest, mirror.LayoutRepoPrefix+c.Rebuilt.LayoutDir
		}
		if d != pc.Digest {
			return fmt.Errorf("catalog %s: this run's catalog is %s, the plan %s recorded %s: the catalog image or the configuration changed since the plan was made; make the plan again (--plan-only) and run the shards for it", pc.Catalog, d, planFile, pc.Digest)
		}
		for i := range p.Images {
			if im := &p.Images[i]; im.Kind == mirror.KindCatalog && im.Source == pc.Catalog {
				im.SourceRepo = repo
			}
		}
	}
	for _, c := range cats {
		if !planned[c.Catalog] {
			return fmt.Errorf("the configuration names catalog %s, which plan %s does not have: make the plan again (--plan-only)", c.Catalog, planFile)
		}
	}
	return nil
}

// missingAt returns the shardable images of p the destination does not hold by
// digest (and under each of their tags), as "destination@digest" lines, sorted.
func (r *run) missingAt(ctx context.Context, p *mirror.Plan, dst transfer.EstimateDestination) ([]string, error) {
	var g errgroup.Group
	g.SetLimit(16)
	gaps := make([]string, len(p.Images))
	for i, im := range p.Images {
		if !mirror.Shardable(im) {
			continue
		}
		g.Go(func() error {
			refs := append([]string{im.Digest.String()}, im.Tags...)
			for _, ref := range refs {
				ok, err := dst.ManifestExists(ctx, im.DestRepo, ref, im.Digest)
				if err != nil {
					return fmt.Errorf("check %s:%s at the destination: %w", im.DestRepo, ref, err)
				}
				if !ok {
					gaps[i] = im.Destination() + "@" + im.Digest.String() + " (" + im.Source + ")"
					return nil
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range gaps {
		if s != "" {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, nil
}

// missingError writes missing.txt and says which images keep --finish from
// pushing the catalogs.
func (r *run) missingError(missing []string, why string) error {
	path := r.workDir.MissingPath()
	if err := writeLines(path, missing); err != nil {
		return err
	}
	show := missing
	if len(show) > 5 {
		show = show[:5]
	}
	more := ""
	if len(missing) > len(show) {
		more = fmt.Sprintf("\n  … and %d more", len(missing)-len(show))
	}
	return fmt.Errorf("%w: %d planned image(s) %s (all listed in %s); run the shards that did not finish (each copies only what is missing), then --finish again:\n  %s%s",
		ErrIncomplete, len(missing), why, path, strings.Join(show, "\n  "), more)
}
