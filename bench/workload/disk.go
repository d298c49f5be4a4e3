package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"
)

// fileOffsets lays the workload's unique blobs out back to back in order of
// first use: the offset of each in the file PullToFile writes.
func (w *Workload) fileOffsets() map[digest.Digest]int64 {
	uploads, _, _ := w.blobUses()
	off := make(map[digest.Digest]int64, len(uploads))
	var pos int64
	for _, u := range uploads {
		off[u.blob.Digest] = pos
		pos += u.blob.Size
	}
	return off
}

// PullToFile is the floor of mirror-to-disk: every unique blob of the
// workload read once from o.From (one GET each, o.Parallel at a time), its
// size and SHA-256 checked as it streams, and written into the one file
// o.ToFile at its place (blobs back to back in order of first use), which is then
// synced. Nothing else: no manifest is read, no tar header written, no blob
// staged apart. Stats count the blobs and bytes written.
func (w *Workload) PullToFile(ctx context.Context, o PushOptions) (PushStats, error) {
	path := o.ToFile
	if o.From == "" || path == "" {
		return PushStats{}, errors.New("pull workload to a file: From (HOST:PORT) and ToFile are required")
	}
	o.defaults()
	p := &pusher{o: o}
	f, err := os.Create(path)
	if err != nil {
		return PushStats{}, err
	}
	defer f.Close()
	uploads, _, _ := w.blobUses()
	offsets := w.fileOffsets()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Parallel)
	for _, u := range uploads {
		g.Go(func() error {
			body, err := p.pull(gctx, u.repo, u.blob)
			if err != nil {
				return err
			}
			defer body.Close()
			buf := make([]byte, 1<<20)
			n, err := io.CopyBuffer(io.NewOffsetWriter(f, offsets[u.blob.Digest]), newVerifying(body, u.blob.Digest, u.blob.Size), buf)
			if err != nil {
				return fmt.Errorf("pull blob %s: %w", u.blob.Digest, err)
			}
			atomic.AddInt64(&p.stats.Blobs, 1)
			atomic.AddInt64(&p.stats.Bytes, n)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return p.snapshot(), err
	}
	if err := f.Sync(); err != nil {
		return p.snapshot(), err
	}
	return p.snapshot(), f.Close()
}
