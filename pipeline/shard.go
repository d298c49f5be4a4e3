package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

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

// LoadPlan reads a plan written by --plan-only: plain JSON or gzip-compressed,
// in path or, when there is no such file, split in parts path.000, path.001…
// (how airlock kube job carries a plan over the ConfigMap size limit).
func LoadPlan(path string) (*mirror.Plan, error) {
	b, err := readPlanFile(path)
	if err != nil {
		return nil, err
	}
	var p mirror.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("plan %s is not a plan airlock wrote: %w", path, err)
	}
	switch p.Workflow {
	case mirror.MirrorToMirror, mirror.MirrorToDisk:
	default:
		return nil, fmt.Errorf("plan %s: workflow %q cannot be sharded (make the plan with airlock mirror --plan-only, mirror-to-mirror or mirror-to-disk)", path, p.Workflow)
	}
	return &p, nil
}

// maxPlanSize bounds a decompressed plan (a plan of a million images is about
// 1 GiB).
const maxPlanSize = 4 << 30

// readPlanFile reads path, or its parts path.000, path.001… put together, and
// decompresses it when it is gzip.
func readPlanFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		var parts []byte
		for i := 0; ; i++ {
			p, perr := os.ReadFile(fmt.Sprintf("%s.%03d", path, i))
			if errors.Is(perr, fs.ErrNotExist) && i > 0 {
				break
			}
			if perr != nil {
				return nil, fmt.Errorf("read the plan: %w", err)
			}
			parts = append(parts, p...)
		}
		b, err = parts, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the plan: %w", err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxPlanSize+1))
	if err != nil {
		return nil, fmt.Errorf("plan %s is damaged (gzip: %v): make it again, or copy it again", path, err)
	}
	if len(out) > maxPlanSize {
		return nil, fmt.Errorf("plan %s decompresses to more than %d bytes: not a plan airlock wrote", path, maxPlanSize)
	}
	return out, nil
}

// PartitionFile reads a plan and partitions it into n shards (airlock kube job
// uses it to size the Job and show the spread).
func PartitionFile(path string, n int) (*mirror.Plan, *mirror.Partition, error) {
	p, err := LoadPlan(path)
	if err != nil {
		return nil, nil, err
	}
	part, err := mirror.PartitionPlan(p, n)
	if err != nil {
		return nil, nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, part, nil
}

// checkSharding checks the sharding options against each other (setup).
func (r *run) checkSharding() error {
	o := r.opts
	sharded := o.PlanFile != ""
	switch {
	case o.PlanOnly && sharded:
		return errors.New("--plan-only makes a plan; --plan FILE uses one: give one of them")
	case o.PlanOnly && o.DryRun:
		return errors.New("--plan-only and --dry-run both only plan: give one of them")
	case (o.PlanOnly || sharded) && r.workflow == mirror.DiskToMirror:
		return errors.New("--plan-only and --plan apply to mirror-to-mirror and mirror-to-disk; disk-to-mirror loads an archive as it is")
	case sharded && o.DryRun:
		return errors.New("--dry-run makes its own plan: it does not take --plan FILE")
	case sharded && o.Finish && o.Shards > 0:
		return errors.New("--finish runs once after every shard: it takes no --shard")
	case sharded && !o.Finish && o.Shards < 1:
		return errors.New("--plan FILE needs --shard I/N (or --shards N with JOB_COMPLETION_INDEX), or --finish")
	case !sharded && (o.Finish || o.Shards > 0):
		return errors.New("--shard and --finish need the plan: --plan FILE (written by --plan-only)")
	case o.Shards > 0 && (o.Shard < 0 || o.Shard >= o.Shards):
		return fmt.Errorf("shard %d of %d: the index must be 0 to %d", o.Shard, o.Shards, o.Shards-1)
	}
	return nil
}

// loadPlanFor reads --plan and checks it was made for this run's workflow and
// destination.
func (r *run) loadPlanFor() (*mirror.Plan, error) {
	p, err := LoadPlan(r.opts.PlanFile)
	if err != nil {
		return nil, err
	}
	if p.Workflow != r.workflow {
		return nil, fmt.Errorf("plan %s is a %s plan; this run is %s: use the same destination as --plan-only did", r.opts.PlanFile, p.Workflow, r.workflow)
	}
	if r.workflow == mirror.MirrorToMirror && strings.TrimSuffix(p.Destination, "/") != strings.TrimSuffix(r.dest, "/") {
		return nil, fmt.Errorf("plan %s was made for docker://%s, not docker://%s: make the plan again for this destination", r.opts.PlanFile, p.Destination, r.dest)
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
	part, err := mirror.PartitionPlan(p, r.opts.Shards)
	if err != nil {
		return fmt.Errorf("plan %s: %w", r.opts.PlanFile, err)
	}
	sh := part.Shards[r.opts.Shard]
	sub := &mirror.Plan{Workflow: p.Workflow, Destination: p.Destination}
	for _, i := range sh.Images {
		sub.Images = append(sub.Images, p.Images[i])
	}
	r.res.Shard = &ShardInfo{Index: r.opts.Shard, Of: r.opts.Shards, Images: len(sh.Images), Bytes: sh.Bytes,
		UniqueBytes: part.UniqueBytes, WaitsFor: len(sh.Elsewhere)}
	r.log.Info("shard", "index", r.opts.Shard, "of", r.opts.Shards, "images", len(sh.Images), "bytes", sh.Bytes, "waitsFor", len(sh.Elsewhere))
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
	if err := matchCatalogs(p, sel.catalogs(), r.opts.PlanFile); err != nil {
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
