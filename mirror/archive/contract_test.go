package archive_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/endpointtest"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// TestContract runs the endpoint contract against the archive: the Reader as
// a Source, the Writer as a Destination, and a shard's Writer (one part of a
// sharded archive) as a Destination read back once the finish part assembled
// the archive.
func TestContract(t *testing.T) {
	t.Run("Reader", func(t *testing.T) {
		endpointtest.Source(t, endpointtest.SourceCase{
			NotFound: archive.ErrNotFound,
			Seed: func(t *testing.T, c *endpointtest.Content) (endpoint.Source, string) {
				dir := t.TempDir()
				w, err := archive.NewWriter(dir, archive.WriterOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Push(context.Background(), w, c.Repo); err != nil {
					t.Fatal(err)
				}
				var tagged []endpointtest.Tagged
				for _, im := range c.Tagged() {
					tagged = append(tagged, endpointtest.Tagged{Repo: c.Repo, Tag: im.Tag, Manifest: im.Manifest})
				}
				return finish(t, w, dir, tagged), c.Repo
			},
		})
	})
	t.Run("Writer", func(t *testing.T) {
		endpointtest.Destination(t, writerCase(archive.WriterOptions{}, finish))
	})
	t.Run("ShardWriter", func(t *testing.T) {
		endpointtest.Destination(t, writerCase(archive.WriterOptions{Part: archive.ShardPart(0, 1)}, finishSharded))
	})
}

// writerCase is the Destination contract's case of a Writer with opts, in a
// batch folder, read back once end has written the archive.
func writerCase(opts archive.WriterOptions, end func(*testing.T, *archive.Writer, string, []endpointtest.Tagged) endpoint.Source) endpointtest.DestinationCase {
	return endpointtest.DestinationCase{
		New: func(t *testing.T) *endpointtest.Dest {
			dir := filepath.Join(t.TempDir(), archive.BatchName(1))
			w, err := archive.NewWriter(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			return &endpointtest.Dest{
				Destination: w,
				ReadBack: func(t *testing.T, tagged []endpointtest.Tagged) endpoint.Source {
					return end(t, w, dir, tagged)
				},
			}
		},
	}
}

// meta is the archive's record of the images pushed under a tag.
func meta(tagged []endpointtest.Tagged) archive.Meta {
	m := archive.Meta{Batch: 1}
	for _, tg := range tagged {
		m.Images = append(m.Images, archive.ImageRecord{
			Source: "source.example/" + tg.Repo + ":" + tg.Tag, Digest: tg.Manifest.Digest, Destination: tg.Repo,
			Tags: []string{tg.Tag}, MediaType: tg.Manifest.MediaType,
		})
	}
	return m
}

// finish writes the archive w staged and opens it.
func finish(t *testing.T, w *archive.Writer, dir string, tagged []endpointtest.Tagged) endpoint.Source {
	t.Helper()
	if _, err := w.Finish(context.Background(), meta(tagged)); err != nil {
		t.Fatal(err)
	}
	return open(t, dir)
}

// finishSharded ends the shard w, assembles the archive with the finish part
// and opens it.
func finishSharded(t *testing.T, w *archive.Writer, dir string, tagged []endpointtest.Tagged) endpoint.Source {
	t.Helper()
	ctx := context.Background()
	rec, err := w.FinishShard(ctx, meta(tagged))
	if err != nil {
		t.Fatal(err)
	}
	fromShard := endpoint.HeldElsewhere{}
	for _, b := range rec.Blobs {
		fromShard[b.Digest] = ""
	}
	f, err := archive.NewWriter(dir, archive.WriterOptions{Part: archive.FinishPart, Elsewhere: fromShard})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.FinishSharded(ctx, meta(tagged), []*archive.ShardRecord{rec}); err != nil {
		t.Fatal(err)
	}
	return open(t, dir)
}

func open(t *testing.T, dir string) endpoint.Source {
	t.Helper()
	r, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
