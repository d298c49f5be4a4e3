package archive

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// countingDest counts the blobs actually transferred into the wrapped destination.
type countingDest struct {
	endpoint.Destination
	puts atomic.Int64
}

func (c *countingDest) PutBlob(ctx context.Context, repo string, d endpoint.Descriptor, r io.Reader) error {
	c.puts.Add(1)
	return c.Destination.PutBlob(ctx, repo, d, r)
}

func sameChunks(t *testing.T, a, b string) {
	t.Helper()
	na, nb := chunkFiles(t, a), chunkFiles(t, b)
	if len(na) != len(nb) {
		t.Fatalf("%d chunks vs %d", len(na), len(nb))
	}
	for _, n := range na {
		if !bytes.Equal(readFile(t, filepath.Join(a, n)), readFile(t, filepath.Join(b, n))) {
			t.Errorf("%s differs from an uninterrupted write", n)
		}
	}
}

func TestResumeAfterKilledWriter(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(7)
	ref := t.TempDir()
	writeArchive(t, ref, WriterOptions{ChunkSize: 20 << 10}, imgs)

	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{ChunkSize: 20 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs[:3] {
		push(t, ctx, w, img)
	}
	// A half-transferred blob is left in tmp by the "killed" process.
	if err := os.WriteFile(filepath.Join(dir, stagingDirName, "tmp", "junk.123"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Close() // killed: no Finish

	w2, err := NewWriter(dir, WriterOptions{ChunkSize: 20 << 10})
	if err != nil {
		t.Fatal(err)
	}
	cd := &countingDest{Destination: w2}
	for _, img := range imgs {
		push(t, ctx, cd, img)
	}
	var first int
	for _, img := range imgs[:3] {
		first += len(img.blobs)
	}
	var all int
	seen := map[string]bool{}
	for _, img := range imgs {
		for _, b := range img.blobs {
			if !seen[string(b)] {
				seen[string(b)] = true
				all++
			}
		}
	}
	if got := cd.puts.Load(); got >= int64(all) || got == 0 {
		t.Errorf("resumed writer transferred %d blobs of %d: finished work was redone", got, all)
	}
	if _, err := w2.Finish(ctx, metaFor(imgs)); err != nil {
		t.Fatal(err)
	}
	sameChunks(t, ref, dir)
}

// cancelWhenExists is a context that is cancelled as soon as a file exists.
type cancelWhenExists struct {
	context.Context
	path string
}

func (c cancelWhenExists) Err() error {
	if _, err := os.Stat(c.path); err == nil {
		return context.Canceled
	}
	return nil
}

func TestResumeInterruptedFinish(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(8)
	opts := WriterOptions{ChunkSize: 20 << 10}
	ref := t.TempDir()
	writeArchive(t, ref, opts, imgs)
	if len(chunkFiles(t, ref)) < 3 {
		t.Fatal("test needs at least 3 chunks")
	}

	dir := t.TempDir()
	w, err := NewWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		push(t, ctx, w, img)
	}
	// Interrupt Finish while it writes chunk 2.
	cctx := cancelWhenExists{ctx, filepath.Join(dir, ChunkName(2))}
	if _, err := w.Finish(cctx, metaFor(imgs)); err == nil {
		t.Fatal("interrupted Finish succeeded")
	}
	w.Close()
	before, err := os.Stat(filepath.Join(dir, ChunkName(1)))
	if err != nil {
		t.Fatal(err)
	}

	w2, err := NewWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Everything is still present for the copy engine: nothing is fetched again.
	cd := &countingDest{Destination: w2}
	for _, img := range imgs {
		push(t, ctx, cd, img)
	}
	if n := cd.puts.Load(); n != 0 {
		t.Errorf("resumed writer fetched %d blobs again", n)
	}
	if _, err := w2.Finish(ctx, metaFor(imgs)); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(filepath.Join(dir, ChunkName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("chunk 1, completed before the interruption, was rewritten")
	}
	sameChunks(t, ref, dir)
	if _, err := Verify(ctx, dir); err != nil {
		t.Fatal(err)
	}
}

// A resumed Finish with different content rewrites the completed chunks that no
// longer fit the layout, taking their blobs back from them.
func TestResumeInterruptedFinishWithNewContent(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(9)
	opts := WriterOptions{ChunkSize: 20 << 10}
	dir := t.TempDir()
	w, err := NewWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs[:4] {
		push(t, ctx, w, img)
	}
	if _, err := w.Finish(cancelWhenExists{ctx, filepath.Join(dir, ChunkName(2))}, metaFor(imgs[:4])); err == nil {
		t.Fatal("interrupted Finish succeeded")
	}
	w.Close()
	w2, err := NewWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		push(t, ctx, w2, img)
	}
	if _, err := w2.Finish(ctx, metaFor(imgs)); err != nil {
		t.Fatal(err)
	}
	ref := t.TempDir()
	writeArchive(t, ref, opts, imgs)
	sameChunks(t, ref, dir)
}
