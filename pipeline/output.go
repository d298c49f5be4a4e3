package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/internal/jsonindent"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/workspace"
)

// writePlan writes plan.json and mapping.txt (tags as the copy will leave them).
func (r *run) writePlan(ctx context.Context) error {
	if err := r.prepareReferrers(ctx); err != nil {
		return err
	}
	return r.savePlan()
}

// prepareReferrers readies the plan's referrers for the destination
// (mirror.Plan.PrepareReferrers), before the plan is written or copied.
func (r *run) prepareReferrers(ctx context.Context) error {
	if r.dest == "" {
		return nil
	}
	return r.res.Plan.PrepareReferrers(ctx, r.destRegistry())
}

// savePlan writes plan.json and mapping.txt of the plan as it is.
func (r *run) savePlan() error {
	// --finish in the plan's workspace: the plan is its input, never rewritten.
	if fa, err := os.Stat(r.opts.Run.PlanFile); err != nil || !sameFile(fa, r.workDir.PlanPath()) {
		if err := writeJSON(r.workDir.PlanPath(), r.res.Plan); err != nil {
			return err
		}
	}
	return writeLines(r.workDir.MappingPath(), r.res.Plan.Mapping())
}

// outcomes fills Result.Images and Result.Failed from the plan and the copy
// report.
func (r *run) outcomes() {
	status := map[string]transfer.ImageResult{}
	if r.res.Copy != nil {
		for _, ir := range r.res.Copy.Images {
			status[ir.Job.Key()] = ir
		}
	}
	r.res.Images = nil
	r.res.Failed = 0
	for _, im := range r.res.Plan.Images {
		out := ImageOutcome{Source: im.Source, Kind: im.Kind, Digest: im.Digest.String(), Destination: im.Destination(), Signature: im.Signature, Attachments: im.Attachments}
		switch {
		case im.Error != "":
			out.Status, out.Error, out.Hint, out.Class = transfer.StatusFailed, im.Error, im.Hint, im.Class
		case r.res.DryRun != nil && r.res.DryRun.Unreadable[im.Job().Key()] != "":
			// The dry run could not read it at the source: the copy would fail.
			out.Status, out.Error = transfer.StatusFailed, r.res.DryRun.Unreadable[im.Job().Key()]
		case r.res.Copy == nil:
			out.Status = workspace.StatusPlanned
		default:
			if ir, ok := status[im.Job().Key()]; ok {
				out.Status, out.Error, out.Hint, out.Class = ir.Status, ir.Err, ir.Hint, ir.Class
			} else {
				out.Status = workspace.StatusNotRun
			}
		}
		if out.Status == transfer.StatusFailed || out.Status == workspace.StatusNotRun {
			r.res.Failed++
		}
		r.res.Images = append(r.res.Images, out)
	}
}

// saveResults writes results.json (outcomes filled Result.Images).
func (r *run) saveResults() error {
	return writeJSON(r.workDir.ResultsPath(), r.res)
}

// clusterResources writes working-dir/cluster-resources from what was mirrored.
func (r *run) clusterResources() error {
	bg, err := r.startClusterResources()
	if err != nil {
		return err
	}
	_, err = bg.wait()
	return err
}

// startClusterResources begins writing working-dir/cluster-resources from
// what was mirrored: what it needs is gathered before it returns, the
// objects are built and written in the background it returns (nil when
// nothing was mirrored), which sets Result.ClusterResources.
func (r *run) startClusterResources() (*background[struct{}], error) {
	ok := map[string]bool{}
	if r.res.Copy != nil {
		for _, ir := range r.res.Copy.Images {
			if ir.Status != transfer.StatusFailed {
				ok[ir.Job.Key()] = true
			}
		}
	}
	mirrored := func(im mirror.PlanImage) bool {
		return im.Error == "" && (r.res.Copy == nil || ok[im.DestRepo+"@"+im.Digest.String()])
	}
	var images []manifests.Image
	var catalogs []manifests.Catalog
	var objects []manifests.File
	for _, im := range r.res.Plan.Images {
		if !mirrored(im) || !im.Kind.Content() || im.Built {
			continue // built images (charts) are pulled where they are: no mirror rule
		}
		images = append(images, manifests.Image{
			Source: im.Source, Destination: im.Destination(), Digest: im.Digest.String(), Kind: manifests.Kind(im.Kind),
		})
	}
	for _, s := range r.sources() {
		res, err := s.Resources(r.res.Plan, mirrored)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name(), err)
		}
		catalogs = append(catalogs, res.Catalogs...)
		objects = append(objects, res.Objects...)
	}
	if len(images) == 0 && len(catalogs) == 0 && len(objects) == 0 {
		r.log.Info("nothing was mirrored: no cluster resources written")
		return nil, nil
	}
	r.stage("cluster-resources")
	key, err := manifests.LoadSignatureKey(r.opts.Signatures.Key, r.policy.ClusterKey)
	if err != nil {
		return nil, err
	}
	opts := manifests.Options{RepositoryScope: r.opts.Destination.MaxNestedPaths > 0, SignatureKey: key, Objects: objects}
	return goBackground(context.Background(), func(context.Context) (struct{}, error) {
		set, err := manifests.Build(images, catalogs, opts)
		if err != nil {
			return struct{}{}, err
		}
		dir := r.workDir.ClusterResourcesDir()
		if err := set.Write(dir); err != nil {
			return struct{}{}, err
		}
		r.res.ClusterResources = nil
		for _, f := range set.Files() {
			r.res.ClusterResources = append(r.res.ClusterResources, filepath.Join(dir, f.Name))
		}
		return struct{}{}, nil
	}), nil
}

func writeLines(path string, lines []string) error {
	var b strings.Builder
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	b.Grow(n)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return writeFile(path, []byte(b.String()))
}

// writeJSON writes v as json.MarshalIndent(v, "", "  ") does, and a
// newline, atomically as writeFile does, without holding the indented
// document (plan.json and results.json are megabytes at 20,000 images).
func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := atomicfile.Create(path, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := jsonindent.Encode(f, v, "  "); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// writeFile writes atomically (temp file, rename) so an interrupted run never
// leaves a half-written record.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0)
}

func sameFile(a os.FileInfo, path string) bool {
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// dryRunParallel is how many images a dry run compares at once: each costs a
// few small requests (HEAD at the destination, the source manifest), so
// latency, not bandwidth, bounds it (3,453 images of a real catalog: 3.1-3.4 s
// at 8, 2.7-2.8 s at 32, under load).
const dryRunParallel = 32

// dryRun compares the plan with the destination through x, whose reading
// may have started while planning (looking: it ends when Estimate has waited
// for what it read).
func (r *run) dryRun(ctx context.Context, x *transfer.Estimator, looking *background[struct{}]) error {
	r.stage("dry-run")
	est, err := x.Estimate(ctx, r.res.Plan.Jobs(), r.stageProgress("dry-run"))
	_, _ = looking.wait()
	if err != nil {
		return err
	}
	r.res.DryRun = est
	if err := os.MkdirAll(r.workDir.DryRunDir(), 0o755); err != nil {
		return err
	}
	if err := writeLines(r.workDir.DryRunMappingPath(), r.res.Plan.Mapping()); err != nil {
		return err
	}
	if err := writeLines(r.workDir.DryRunMissingPath(), r.res.Plan.MappingLines(est.Missing)); err != nil {
		return err
	}
	// No cluster resources: nothing was mirrored for them to point at.
	return nil
}
