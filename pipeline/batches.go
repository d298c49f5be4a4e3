package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/workspace"
)

// Mirror runs one mirror command: mirror-to-mirror (Destination docker:// and
// Workspace), mirror-to-disk (Destination file://) or disk-to-mirror (From and
// Destination docker://). It always returns a Result when it got as far as
// planning; the error wraps ErrIncomplete when some images failed.
//
// With From a mirror-to-disk target (its batch-NNNN folders), disk-to-mirror
// loads every batch the destination has not loaded yet (loaded.json says
// which), in order, one run each: the earlier ones with the configuration they
// were made with, the newest with ConfigPath. The Result is the newest batch's.
func Mirror(ctx context.Context, opts Options) (*Result, error) {
	if opts.From == "" || opts.PlanFile != "" {
		return mirrorOnce(ctx, opts)
	}
	target, err := workspace.FileDir(opts.From, "--from")
	if err != nil {
		return nil, err
	}
	ws, err := diskToMirrorWorkspace(opts)
	if err != nil {
		return nil, err
	}
	rec, err := workspace.ReadLoaded(workspace.At(ws))
	if err != nil {
		return nil, err
	}
	lp, ok, err := rec.BatchesToLoad(target, strings.TrimPrefix(opts.Destination, "docker://"))
	if err != nil || !ok {
		if err != nil {
			return nil, fmt.Errorf("--from %s: %w", target, err)
		}
		return mirrorOnce(ctx, opts)
	}
	var res *Result
	for _, b := range lp.Load {
		o := opts
		o.From = "file://" + b.Dir
		if !b.Last && len(b.Config) > 0 {
			o.batchConfig = &imageset.ImageSetConfiguration{}
			if err := json.Unmarshal(b.Config, o.batchConfig); err != nil {
				return nil, fmt.Errorf("%s: the configuration its archive records: %w", b.Ref, err)
			}
		}
		lp.Newest = b.Ref
		res, err = mirrorOnce(ctx, o)
		if res != nil {
			res.Batches = lp
		}
		if err != nil {
			return res, fmt.Errorf("loading %s of %s: %w", b.Ref, target, err)
		}
		if c := res.Counts(); !b.Last {
			lp.Done = append(lp.Done, workspace.BatchDone{Batch: b.Ref, Images: c.Planned, Copied: c.Copied, Present: c.Present})
		}
	}
	return res, nil
}

// writeNothingNew says that a mirror-to-disk run wrote no batch, if so.
func (r *Result) writeNothingNew(w io.Writer) bool {
	b := r.NothingNew
	if b == nil {
		return false
	}
	fmt.Fprintf(w, "  archive:   nothing new since %s: no batch written; its %d images are in %s and the batches before it\n", b, len(r.Images), b.Dir)
	r.writePinnedLine(w)
	fmt.Fprintf(w, "  records:   %s\n", workspace.Dir(r.WorkingDir).ResultsPath())
	return true
}

// writePinnedLine names the pinned configuration the run wrote.
func (r *Result) writePinnedLine(w io.Writer) {
	if r.PinnedConfig != "" {
		fmt.Fprintf(w, "  pinned:    %s (this configuration pinned by digest: mirror -c it to select exactly the same images)\n", r.PinnedConfig)
	}
}
