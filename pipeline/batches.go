package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/workspace"
)

// Mirror runs one mirror command: mirror-to-mirror, mirror-to-disk or
// disk-to-mirror (Archive.From; from a folder of batches, each batch
// PlanBatchLoad and AskRegistry leave, in order; the Result is the newest's),
// after Validate. It returns a Result once it got as far as planning; the
// error wraps ErrIncomplete when images failed.
func Mirror(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	dest := opts.Destination.Location
	if opts.Archive.From.IsZero() || opts.Run.PlanFile != "" {
		return mirrorOnce(ctx, opts, nil)
	}
	lp, ok, err := workspace.PlanBatchLoad(opts.Archive.From, opts.Workspace, dest.Path)
	if err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return mirrorOnce(ctx, opts, nil)
	}
	r := &run{opts: opts, log: slog.New(slog.DiscardHandler), inputs: inputs{dest: dest.Path}}
	if err := lp.AskRegistry(func(m *archive.Manifest) (bool, error) { return m.CatalogsAt(ctx, r.destRegistry(), r.destRepo) }); err != nil {
		return nil, fmt.Errorf("--from %s: %w", lp.Target, err)
	}
	var res *Result
	for _, b := range lp.Load {
		o := opts
		o.Archive.From, lp.Newest = location.File(b.Dir), b.Ref
		var batch *imageset.ImageSetConfiguration
		if !b.Last {
			batch = b.Config
		}
		if res, err = mirrorOnce(ctx, o, batch); res != nil {
			res.Batches = lp
		}
		if err != nil {
			return res, fmt.Errorf("loading %s of %s: %w", b.Ref, lp.Target, err)
		}
		if c := res.Counts(); !b.Last {
			lp.Done = append(lp.Done, workspace.BatchDone{Batch: b.Ref, Images: c.Planned, Copied: c.Copied, Present: c.Present})
		}
	}
	return res, nil
}

// writeNothingNew says that a mirror-to-disk run wrote no batch, if so.
func (r *Result) writeNothingNew(w io.Writer) bool {
	if b := r.NothingNew; b != nil {
		fmt.Fprintf(w, "  archive:   nothing new since %s: no batch written; its %d images are in %s and the batches before it\n", b, len(r.Images), b.Dir)
		r.writeRecords(w)
	}
	return r.NothingNew != nil
}
