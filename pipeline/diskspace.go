package pipeline

import (
	"context"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// skipSpaceCheckFlag is the flag that lets mirror-to-disk go on when its
// archive's filesystem looks too small.
const skipSpaceCheckFlag = "--skip-space-check"

// checkSpace measures, when dst is an archive, what the jobs will stage
// (their distinct blobs less what the batch holds already: staged, shipped by
// an earlier batch, or partly fetched by an interrupted run) and refuses the
// run when the archive's filesystem cannot take it, before anything is
// staged (archive.Writer.CheckSpace). The measure is returned for the
// progress totals, so that the manifests are read once. Nothing is measured
// for other destinations, or with --skip-space-check.
func (r *run) checkSpace(ctx context.Context, src *transfer.MemoSource, dst endpoint.Destination, jobs []transfer.Job) (*transfer.Sizes, error) {
	w, ok := dst.(*archive.Writer)
	if !ok || r.opts.Archive.SkipSpaceCheck || len(jobs) == 0 {
		return nil, nil
	}
	r.stage("measure")
	s, err := transfer.Measure(ctx, src, w, jobs, 16, r.stageProgress("measure"))
	if err != nil {
		return nil, err
	}
	seen := map[digest.Digest]bool{}
	var toWrite int64
	for _, blobs := range s.PerJob {
		for _, b := range blobs {
			if !seen[b.Digest] {
				seen[b.Digest] = true
				toWrite += w.ToWrite(b)
			}
		}
	}
	r.log.Debug("space needed by the batch", "toWrite", toWrite, "measured", s.Bytes)
	return s, w.CheckSpace(toWrite, skipSpaceCheckFlag)
}
