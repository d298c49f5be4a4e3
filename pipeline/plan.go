package pipeline

import (
	"context"
	"slices"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// plan resolves the images the sources selected while what they still build
// (a catalog being rebuilt) is finished (sel.finish waits for it), then adds
// the catalogs. Each image resolved is handed to pre (nil: none) to send its
// blobs meanwhile; with est, the dry run's reading of the images starts too,
// in the returned background (nil without est).
func (r *run) plan(ctx context.Context, src *registry.Client, sel *selected, pre *transfer.Prefetch, est *transfer.Estimator) (*background[struct{}], error) {
	r.stage("plan")
	cats := sel.catalogs()
	req := mirror.PlanRequest{
		Workflow: r.workflow, Destination: r.dest, MaxNestedPaths: r.opts.Destination.MaxNestedPaths,
		Catalogs: cats, Images: sel.images, Blocked: r.blocked(),
		Progress: r.stageProgress("plan"), Prefetch: pre,
	}
	// The hosts to probe: an image built locally is read from a layout (its
	// name only names it) and a blocked one is never read.
	var refs []string
	blocked := mirror.BlockedMatcher(req.Blocked)
	for _, c := range cats {
		for _, ref := range c.Images {
			if !blocked(ref) {
				refs = append(refs, ref)
			}
		}
	}
	for _, a := range req.Images {
		if a.Built == nil && !blocked(a.Name) {
			refs = append(refs, a.Name)
		}
	}
	// What earlier runs found is read while the images are resolved
	// (megabytes of JSON at 20,000 images); none with --refresh-signatures.
	var loading *background[*signature.Record]
	if !r.opts.Signatures.Refresh {
		loading = goBackground(ctx, func(context.Context) (*signature.Record, error) {
			return signature.LoadRecord(r.workDir.AttachmentsPath())
		})
	}
	down := r.probeImageHosts(ctx, src, refs)
	p, err := mirror.PlanImages(ctx, req, src, 16)
	known, lerr := loading.wait()
	if err != nil {
		return nil, err
	}
	if lerr != nil {
		r.log.Warn(lerr.Error())
	}
	if !r.opts.Run.DryRun { // the dry run finds them unreadable, image by image
		p.FailHosts(down)
	}
	st, rec, err := p.AddAttachments(ctx, src, mirror.Attach{Signatures: r.opts.Signatures.Mode, Policy: r.policy.Verifier(), Catalogs: cats, Known: known}, 16)
	if err != nil {
		return nil, err
	}
	if err := rec.Save(r.workDir.AttachmentsPath()); err != nil {
		r.log.Warn(err.Error())
	}
	r.res.Signatures = &st
	var looking *background[struct{}]
	if est != nil {
		jobs := p.Jobs()
		looking = goBackground(ctx, func(ctx context.Context) (struct{}, error) {
			est.Look(ctx, jobs, nil)
			return struct{}{}, nil
		})
	}
	if err := sel.finish(false); err != nil {
		return looking, err
	}
	req.Catalogs = sel.catalogs() // finish set their Rebuilt
	p.AddCatalogs(req)
	p.Extras = sel.extras
	r.setPlan(p)
	if o := r.opts.Run; r.workflow != mirror.MirrorToMirror || o.DryRun || o.PlanOnly || o.PlanFile != "" {
		return looking, r.writePlan(ctx)
	}
	// Mirror-to-mirror: the plan is the copy's input, and nothing changes it
	// once made; its files are written while it is copied (the records wait
	// for them).
	if err := r.prepareReferrers(ctx); err != nil {
		return looking, err
	}
	r.planFiles = goBackground(ctx, func(context.Context) (struct{}, error) { return struct{}{}, r.savePlan() })
	return looking, nil
}

func (r *run) setPlan(p *mirror.Plan) {
	r.res.Plan = p
	r.res.Catalogs = p.Catalogs
	r.res.Blocked = p.Blocked
	// Each warning is logged once per run, when it is first found (a plan set
	// again, a shard's, carries those of the plan it came from).
	for _, w := range p.Warnings {
		if !slices.Contains(r.res.Warnings, w) {
			r.res.Warnings = append(r.res.Warnings, w)
		}
	}
	for _, w := range r.res.Warnings[r.warned:] {
		r.log.Warn(w)
	}
	r.warned = len(r.res.Warnings)
	for _, n := range p.Notes {
		if !slices.Contains(r.res.Notes, n) {
			r.res.Notes = append(r.res.Notes, n)
			r.log.Info(n)
		}
	}
}

// planSources asks every source what it selects and plans every image from
// the source registries (mux reads them, and the layouts of the rebuilt
// catalogs). It waits for the registry probes (preflight) before planning,
// the first stage that may write: each resolved image is handed to pre, the
// prefetch the orchestrator started (nil: none). With est, the dry run's
// reading starts while the catalogs are rebuilt: the returned background.
func (r *run) planSources(ctx context.Context, mux *mirror.SourceMux, probes *background[struct{}], pre *transfer.Prefetch, est *transfer.Estimator) (*background[struct{}], error) {
	sel, err := r.selectAll(ctx)
	if err == nil {
		if _, perr := probes.wait(); perr != nil {
			_ = sel.finish(true)
			err = perr
		}
	}
	if err == nil {
		for _, dir := range sel.local {
			if err = mux.AddLocalBlobs(dir); err != nil {
				_ = sel.finish(true)
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	looking, err := r.plan(ctx, r.srcRegistry(), sel, pre, est)
	if err != nil {
		// Nothing keeps reading or writing after the run.
		_, _ = looking.stop()
		_ = sel.finish(true)
		return nil, err
	}
	return looking, nil
}
