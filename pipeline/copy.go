package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/workspace"
)

// copy copies the plan's jobs from src to dst, measuring them first for the
// progress totals. pre, when set, is the prefetch that began the copy while
// planning (its endpoints are src and dst): the copy continues with it.
func (r *run) copy(ctx context.Context, src endpoint.Source, dst endpoint.Destination, pre *transfer.Prefetch) (*transfer.Report, error) {
	rep, err := r.copyWith(ctx, src, dst, r.res.Plan.Jobs(), nil, pre)
	if err == nil {
		if werr := r.res.Plan.PublishReferrers(ctx, dst, rep); werr != nil {
			r.log.Warn(werr.Error())
			r.res.Warnings = append(r.res.Warnings, werr.Error())
		}
	}
	return rep, err
}

// copyOptions are the copy engine's options from the run's flags.
func (r *run) copyOptions(progress func(transfer.ProgressEvent)) transfer.Options {
	return transfer.Options{
		ParallelImages: r.opts.Network.ParallelImages, ParallelLayers: r.opts.Network.ParallelLayers,
		Retry: r.retry(), Logger: r.log, Progress: progress, ImageTimeout: r.opts.Network.ImageTimeout,
		Recorded: r.recordedTags(),
	}
}

// recorded is what the last run to the destination recorded there, read
// once, beside the stages before planning (startRecordedTags).
type recorded struct {
	read   *background[map[string]map[string]digest.Digest]
	warned sync.Once
}

// startRecordedTags begins reading what recordedTags returns (the newest
// history record is megabytes of JSON at 20,000 images), so that the reading
// runs beside preflight instead of before planning. The run stops it when it
// ends (stopRecordedTags).
func (r *run) startRecordedTags(ctx context.Context) {
	if r.opts.Destination.CheckEveryImage || r.dest == "" || (r.workflow != mirror.MirrorToMirror && r.workflow != mirror.DiskToMirror) {
		return
	}
	r.recorded.read = goBackground(ctx, func(context.Context) (map[string]map[string]digest.Digest, error) {
		return workspace.RecordedTags(r.workDir, r.dest)
	})
}

// stopRecordedTags waits for the reading startRecordedTags began, if any.
func (r *run) stopRecordedTags() { _, _ = r.recorded.read.stop() }

// recordedTags is what the last run to the run's destination registry
// recorded there (workspace.RecordedTags), read once: a re-run finds the
// images it left under their digest-derived tags with one tag listing per
// repository. nil with --check-every-image, without a destination registry,
// or when the history cannot be read (every image is then asked about).
func (r *run) recordedTags() map[string]map[string]digest.Digest {
	tags, err := r.recorded.read.wait() // nil: none was started
	if err != nil {
		r.recorded.warned.Do(func() {
			r.log.Warn("every image is asked about at the destination: the history cannot be read", "error", err)
		})
		return nil
	}
	return tags
}

// copyJobs copies jobs from src to dst; blobs in elsewhere are sent by another
// shard (transfer.Options.Elsewhere).
func (r *run) copyJobs(ctx context.Context, src endpoint.Source, dst endpoint.Destination, jobs []transfer.Job, elsewhere endpoint.HeldElsewhere) (*transfer.Report, error) {
	return r.copyWith(ctx, src, dst, jobs, elsewhere, nil)
}

func (r *run) copyWith(ctx context.Context, src endpoint.Source, dst endpoint.Destination, jobs []transfer.Job, elsewhere endpoint.HeldElsewhere, pre *transfer.Prefetch) (*transfer.Report, error) {
	if err := r.checkSparseIndexes(ctx, dst, jobs); err != nil {
		return nil, err
	}
	memo := transfer.NewMemoSource(src)
	measured, err := r.checkSpace(ctx, memo, dst, jobs)
	if err != nil {
		return nil, err
	}
	progress, held, err := r.track(ctx, memo, dst, jobs, pre, measured)
	if err != nil {
		return nil, err
	}
	o := r.copyOptions(progress)
	o.Held = held
	o.Elsewhere = elsewhere
	var rep *transfer.Report
	if pre != nil {
		rep, err = pre.Copy(ctx, jobs, o) // with the endpoints it was made with
	} else {
		rep, err = transfer.Copy(ctx, memo, dst, jobs, o)
	}
	r.setCopy(rep)
	r.noteAltered(dst)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	if errors.Is(err, endpoint.ErrRegistryUnreachable) {
		return rep, err
	}
	return rep, nil // other failures are in the report
}

// noteAltered records in the results, with a warning each, the altered
// manifest revisions the destination registry refused to delete
// (registry.Client.AlteredKept) that are not recorded yet.
func (r *run) noteAltered(dst endpoint.Destination) {
	reg, ok := dst.(*registry.Client)
	if !ok {
		return
	}
	kept := reg.AlteredKept()
	for _, a := range kept {
		if slices.Contains(r.res.AlteredManifests, a) {
			continue
		}
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("%s@%s: the registry stored this manifest altered on the way and refused to delete it; its tag was pushed again and names the right manifest, but this revision stays readable by its digest; %s", a.Repository, a.Digest, gcAdvice))
	}
	r.res.AlteredManifests = kept
}
