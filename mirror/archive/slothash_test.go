package archive

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// pushOrdered puts the blobs of imgs into w in the given order of their
// digests (each once), then every image's manifests.
func pushOrdered(t *testing.T, w *Writer, imgs []testImage, order func([]digest.Digest)) {
	t.Helper()
	ctx := context.Background()
	blobs := map[digest.Digest][]byte{}
	repo := map[digest.Digest]string{}
	var ds []digest.Digest
	for _, img := range imgs {
		for _, b := range img.blobs {
			d := digest.FromBytes(b)
			if _, ok := blobs[d]; !ok {
				blobs[d], repo[d] = b, img.repo
				ds = append(ds, d)
			}
		}
	}
	order(ds)
	for _, d := range ds {
		if err := w.PutBlob(ctx, repo[d], endpoint.Descriptor{Digest: d, Size: int64(len(blobs[d]))}, bytes.NewReader(blobs[d])); err != nil {
			t.Fatal(err)
		}
	}
	for _, img := range imgs {
		push(t, ctx, w, img) // the blobs are there: the manifests go in
	}
}

// TestFinishReadsNoChunkBack: the payload hash of each chunk laid out before
// the copy is computed while its blobs arrive, in any order, so Finish reads
// none of their bytes back; the archive is byte for byte the one written
// without a layout before the copy. Blobs an earlier process wrote are
// verified and hashed by Finish.
func TestFinishReadsNoChunkBack(t *testing.T) {
	rng := testRNG(41)
	imgs := testSet(41)
	for i := range 6 {
		imgs = append(imgs, makeImage(rng, "ns/big", fmt.Sprintf("v%d", i), randBytes(rng, 30<<10)))
	}
	orders := map[string]func([]digest.Digest){
		"laid-out order": slices.Sort[[]digest.Digest],
		"reverse": func(ds []digest.Digest) {
			slices.Sort(ds)
			slices.Reverse(ds)
		},
		"random": func(ds []digest.Digest) {
			r := rand.New(rand.NewPCG(7, 7))
			r.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
		},
	}
	for _, chunkSize := range []int64{0, 96 << 10} {
		want := writeArchive(t, t.TempDir(), WriterOptions{ChunkSize: chunkSize}, imgs)
		for name, order := range orders {
			t.Run(fmt.Sprintf("%s, chunk size %d", name, chunkSize), func(t *testing.T) {
				dir := t.TempDir()
				w := expectingWriter(t, dir, WriterOptions{ChunkSize: chunkSize}, imgs)
				pushOrdered(t, w, imgs, order)
				if _, err := w.Finish(context.Background(), metaFor(imgs)); err != nil {
					t.Fatal(err)
				}
				if w.readBack != 0 {
					t.Errorf("Finish read %d bytes of the chunks back: their hashes were computed while the blobs arrived", w.readBack)
				}
				checkArchive(t, dir, imgs, want)
			})
		}
	}
	t.Run("blobs of an earlier process", func(t *testing.T) {
		dir := t.TempDir()
		w, err := NewWriter(dir, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Expect(planBlobs(imgs)); err != nil {
			t.Fatal(err)
		}
		pushOrdered(t, w, imgs[:2], slices.Sort[[]digest.Digest])
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		w2, err := NewWriter(dir, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w2.Expect(planBlobs(imgs)); err != nil {
			t.Fatal(err)
		}
		pushOrdered(t, w2, imgs, slices.Sort[[]digest.Digest])
		if _, err := w2.Finish(context.Background(), metaFor(imgs)); err != nil {
			t.Fatal(err)
		}
		if w2.readBack == 0 {
			t.Error("Finish read nothing back: the blobs the first process wrote are hashed (and verified) by Finish")
		}
		checkArchive(t, dir, imgs, nil)
	})
}

// TestSlotBytesHandedToWriteback: every byte written into a slot is handed to
// the kernel's writeback once, as it is written (in runs of about
// writebackEvery), not left for the fsync that seals the chunk.
func TestSlotBytesHandedToWriteback(t *testing.T) {
	type span struct{ off, n int64 }
	var mu sync.Mutex
	var got []span
	writeback = func(_ *os.File, off, n int64) {
		mu.Lock()
		got = append(got, span{off, n})
		mu.Unlock()
	}
	t.Cleanup(func() { writeback = startWriteback })
	rng := testRNG(43)
	imgs := []testImage{makeImage(rng, "ns/big", "v1", randBytes(rng, writebackEvery+(3<<20)), randBytes(rng, 5000))}
	w, err := NewWriter(t.TempDir(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	blobs := planBlobs(imgs)
	if err := w.Expect(blobs); err != nil {
		t.Fatal(err)
	}
	pushOrdered(t, w, imgs, slices.Sort[[]digest.Digest])
	var want []span
	for _, b := range blobs {
		s, ok := w.slotOf(b)
		if !ok {
			t.Fatalf("blob %s has no slot", b.Digest)
		}
		want = append(want, span{s.offset, s.size})
	}
	slices.SortFunc(got, func(a, b span) int { return int(a.off - b.off) })
	slices.SortFunc(want, func(a, b span) int { return int(a.off - b.off) })
	// Merge the runs handed over into contiguous spans: they must be the slots.
	var merged []span
	for _, s := range got {
		if s.n <= 0 || s.n > writebackEvery+(1<<20) {
			t.Errorf("a run of %d bytes handed to writeback", s.n)
		}
		if k := len(merged) - 1; k >= 0 && merged[k].off+merged[k].n == s.off {
			merged[k].n += s.n
			continue
		}
		merged = append(merged, s)
	}
	if !slices.Equal(merged, want) {
		t.Errorf("handed to writeback %v (runs %v), want the slots %v", merged, got, want)
	}
	if len(got) < 3 {
		t.Errorf("%d runs for a blob of %d bytes and a small one: the large one is handed over while it is written", len(got), writebackEvery+(3<<20))
	}
}
