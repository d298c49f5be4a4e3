package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/workspace"
)

// BatchesLoaded is what disk-to-mirror did with a --from TARGET of batches.
type BatchesLoaded struct {
	Target string `json:"target"`
	// Loaded are the batches loaded before the newest one (which the Result
	// describes), with how many images each copied.
	Loaded []BatchLoad `json:"loaded,omitempty"`
	// Already were loaded into the destination by earlier commands; Skipped
	// are older batches superseded by one that was.
	Already []archive.BatchRef `json:"already,omitempty"`
	Skipped []archive.BatchRef `json:"skipped,omitempty"`
	// Newest is the batch the Result describes.
	Newest archive.BatchRef `json:"newest"`
}

// BatchLoad is one batch loaded before the newest.
type BatchLoad struct {
	Batch  archive.BatchRef `json:"batch"`
	Counts ImageCounts      `json:"images"`
}

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
	done := &BatchesLoaded{Target: target, Already: lp.Loaded, Skipped: lp.Skipped}
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
		done.Newest = b.Ref
		res, err = mirrorOnce(ctx, o)
		if res != nil {
			res.Batches = done
		}
		if err != nil {
			return res, fmt.Errorf("loading %s of %s: %w", b.Ref, target, err)
		}
		if !b.Last {
			done.Loaded = append(done.Loaded, BatchLoad{Batch: b.Ref, Counts: res.Counts()})
		}
	}
	return res, nil
}

// write says which batches of the target this command loaded before the
// one the summary describes.
func (b *BatchesLoaded) write(w io.Writer) {
	if b == nil {
		return
	}
	for _, r := range b.Already {
		fmt.Fprintf(w, "  batch:     %s was loaded by an earlier command\n", r)
	}
	for _, r := range b.Skipped {
		fmt.Fprintf(w, "  batch:     %s skipped: a newer batch was loaded already\n", r)
	}
	for _, l := range b.Loaded {
		fmt.Fprintf(w, "  batch:     %s loaded: %d images, %d copied, %d already there\n", l.Batch, l.Counts.Planned, l.Counts.Copied, l.Counts.Present)
	}
	fmt.Fprintf(w, "  batch:     %s loaded, the newest of %s: the lines below are its own\n", b.Newest, b.Target)
}

// writeNothingNew says that a mirror-to-disk run wrote no batch, if so.
func (r *Result) writeNothingNew(w io.Writer) bool {
	b := r.NothingNew
	if b == nil {
		return false
	}
	fmt.Fprintf(w, "  archive:   nothing new since %s: no batch written; its %d images are in %s and the batches before it\n", b, len(r.Images), b.Dir)
	fmt.Fprintf(w, "  records:   %s\n", workspace.Dir(r.WorkingDir).ResultsPath())
	return true
}
