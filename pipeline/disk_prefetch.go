package pipeline

import (
	"context"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// planToDisk is mirror-to-disk with --plan-only or --dry-run: the plan is
// made and recorded, or compared with what earlier batches shipped, and
// nothing is written into the target.
func (r *run) planToDisk(ctx context.Context, mux *mirror.SourceMux, probes *background[struct{}]) error {
	if _, err := r.planSources(ctx, mux, probes, nil, nil); err != nil {
		return err
	}
	if r.opts.Run.PlanOnly {
		return r.recordBlobs(ctx, mux)
	}
	_, shipped, _, err := r.archiveBase()
	if err != nil {
		return err
	}
	if _, _, _, err := archive.NextBatch(r.topDir); err != nil {
		return err
	}
	return r.dryRun(ctx, transfer.NewEstimator(mux, shipped, dryRunParallel), nil)
}

// startDiskPrefetch starts fetching the blobs of the images resolved into the
// staging area of w while planning goes on (startPrefetch), nil when the run
// does not prefetch. Until the plan is measured and its space checked, what it
// stages is bounded by the free space of the archive's filesystem
// (archive.Writer.BoundStaging: less one chunk, or less half of it), with --skip-space-check
// too: a run that goes on past the space check fills the disk in its copy,
// never while planning.
func (r *run) startDiskPrefetch(ctx context.Context, mux *mirror.SourceMux, w *archive.Writer) *transfer.Prefetch {
	pre := r.startPrefetch(ctx, mux, w)
	if pre == nil {
		return nil
	}
	if bound := w.BoundStaging(); bound >= 0 {
		r.log.Debug("blobs fetched while planning, before the space check, at most", "bytes", bound)
	}
	return pre
}

// closeBatch releases the batch writer w of dir when mirror-to-disk returns.
// A batch that holds nothing (the run found nothing new, or stopped before
// any blob was fetched) and held nothing before the run (wasEmpty) is removed,
// so that no empty batch stands in the target; any other stays for the next
// run to resume or, finished, as it is.
func (r *run) closeBatch(w *archive.Writer, dir string, wasEmpty bool) {
	if err := w.Close(); err != nil {
		r.log.Warn("closing the batch's staging area", "batch", dir, "error", err)
	}
	if moved, left := w.StagedBeforeLayout(); moved+left > 0 {
		r.log.Debug("blobs fetched before the layout, moved into their chunks", "moved", moved, "leftStaged", left)
	}
	if !wasEmpty {
		return
	}
	if err := w.RemoveIfEmpty(); err != nil {
		r.log.Debug("leaving the empty batch folder", "batch", dir, "error", err)
	}
}
