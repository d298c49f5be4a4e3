package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/workspace"
)

// Mirror runs one mirror command: mirror-to-mirror, mirror-to-disk or
// disk-to-mirror (From; from a folder of batches, each batch PlanBatchLoad and
// AskRegistry leave, in order; the Result is the newest's). It returns a Result
// once it got as far as planning; the error wraps ErrIncomplete when images failed.
func Mirror(ctx context.Context, opts Options) (*Result, error) {
	if opts.From == "" || opts.PlanFile != "" || !strings.HasPrefix(opts.Destination, "docker://") {
		return mirrorOnce(ctx, opts)
	}
	lp, ok, err := workspace.PlanBatchLoad(opts.From, opts.Workspace, opts.Destination)
	if err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return mirrorOnce(ctx, opts)
	}
	r := &run{opts: opts, log: slog.New(slog.DiscardHandler), inputs: inputs{dest: strings.TrimPrefix(opts.Destination, "docker://")}}
	if err := lp.AskRegistry(func(m *archive.Manifest) (bool, error) { return m.CatalogsAt(ctx, r.destRegistry(), r.destRepo) }); err != nil {
		return nil, fmt.Errorf("--from %s: %w", lp.Target, err)
	}
	var res *Result
	for _, b := range lp.Load {
		o := opts
		o.From, lp.Newest = "file://"+b.Dir, b.Ref
		if !b.Last {
			o.batchConfig = b.Config
		}
		if res, err = mirrorOnce(ctx, o); res != nil {
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
