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

// checkSpace measures, when dst is an archive, what the jobs will write
// (their distinct blobs less what the batch holds already: written, shipped by
// an earlier batch, or partly fetched by an interrupted run), refuses the
// run when the archive's filesystem cannot take it, before anything is
// written (archive.Writer.CheckSpace; not with --skip-space-check), and lays
// the blobs and the manifests out in the archive's chunks
// (archive.Writer.Expect), so that each is written once, at its place, as it
// arrives. The measure is returned for
// the progress totals, so that the manifests are read once. Nothing is
// measured for other destinations.
func (r *run) checkSpace(ctx context.Context, src *transfer.MemoSource, dst endpoint.Destination, jobs []transfer.Job) (*transfer.Sizes, error) {
	w, ok := dst.(*archive.Writer)
	if !ok || len(jobs) == 0 {
		return nil, nil
	}
	r.stage("measure")
	s, err := transfer.Measure(ctx, src, w, jobs, 16, r.stageProgress("measure"))
	if err != nil {
		return nil, err
	}
	seen := map[digest.Digest]bool{}
	var toWrite int64
	var all []endpoint.Descriptor
	for _, blobs := range s.PerJob {
		for _, b := range blobs {
			if !seen[b.Digest] {
				seen[b.Digest] = true
				toWrite += w.ToWrite(b)
				all = append(all, b)
			}
		}
	}
	for _, mans := range s.Manifests {
		for _, m := range mans {
			if !seen[m.Digest] {
				seen[m.Digest] = true
				all = append(all, m)
			}
		}
	}
	r.log.Debug("space needed by the batch", "toWrite", toWrite, "measured", s.Bytes)
	if !r.opts.Archive.SkipSpaceCheck {
		if err := w.CheckSpace(toWrite, skipSpaceCheckFlag); err != nil {
			return s, err
		}
	}
	return s, w.Expect(all)
}
