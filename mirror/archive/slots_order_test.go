package archive

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
)

// TestExpectDeterministic: blobs written into chunks laid out before the copy
// give the same chunks whatever order they arrive in.
func TestExpectDeterministic(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(12)
	write := func(order []testImage, concurrent bool) string {
		dir := t.TempDir()
		w, err := NewWriter(dir, WriterOptions{ChunkSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Expect(planBlobs(imgs)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, img := range order {
			if !concurrent {
				push(t, ctx, w, img)
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); push(t, ctx, w, img) }()
		}
		wg.Wait()
		if _, err := w.Finish(ctx, metaFor(imgs)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a := write(imgs, false)
	rev := slices.Clone(imgs)
	slices.Reverse(rev)
	b := write(rev, true)
	na, nb := chunkFiles(t, a), chunkFiles(t, b)
	if !slices.Equal(na, nb) {
		t.Fatalf("chunks %v vs %v", na, nb)
	}
	for _, n := range na {
		if !bytes.Equal(readFile(t, filepath.Join(a, n)), readFile(t, filepath.Join(b, n))) {
			t.Errorf("%s differs between two writes of the same content", n)
		}
	}
}

// TestExpectStrictRefusesEarly: with Strict, a blob larger than the chunk
// size is refused when the layout is made, before anything is fetched, and
// no chunk file is created.
func TestExpectStrictRefusesEarly(t *testing.T) {
	rng := testRNG(13)
	big := randBytes(rng, 40<<10)
	imgs := []testImage{makeImage(rng, "ns/small", "v1", randBytes(rng, 2000)), makeImage(rng, "ns/big", "v1", big)}
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{ChunkSize: 16 << 10, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	err = w.Expect(planBlobs(imgs))
	if err == nil || !strings.Contains(err.Error(), digest.FromBytes(big).String()) || !strings.Contains(err.Error(), "--strict-archive") {
		t.Fatalf("Expect with --strict-archive: %v", err)
	}
	if n := chunkFiles(t, dir); len(n) != 0 || len(w.pre) != 0 {
		t.Errorf("laid out although refused: %v, %d chunks", n, len(w.pre))
	}
}

// TestExpectShardKeepsManifestsOut: a shard keeps its manifests in its
// record, so its layout leaves them out.
func TestExpectShardKeepsManifestsOut(t *testing.T) {
	imgs := testSet(14)
	w := expectingWriter(t, t.TempDir(), WriterOptions{Part: ShardPart(0, 2)}, imgs)
	defer w.Close()
	if got, want := len(w.slots), len(distinct(planBlobs(imgs))); got != want {
		t.Errorf("%d blobs laid out, want the %d layers and configs", got, want)
	}
	for _, m := range planManifests(imgs) {
		if _, ok := w.slots[m.Digest]; ok {
			t.Errorf("manifest %s laid out in a shard's chunk", m.Digest)
		}
	}
}
