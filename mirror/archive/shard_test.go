package archive

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// shardedSet is testSet split over two shards the way the plan's partition
// splits a group sharing a base layer: the base layer is owned by shard 0 and
// shard 1 only refers to it; shard 1 also holds app0 again in another
// repository (the same manifest in two shards), and the finish part gets a
// "catalog" image on the same base layer.
func shardedSet() (shards [2][]testImage, catalog testImage, all []testImage) {
	imgs := testSet(3)
	again := imgs[0]
	again.repo = "ns/again"
	shards[0] = []testImage{imgs[0], imgs[1], imgs[4]}
	shards[1] = []testImage{imgs[2], imgs[3], again}
	catalog = makeImage(testRNG(5), "ns/catalog", "v1", imgs[4].blobs[len(imgs[4].blobs)-1], randBytes(testRNG(6), 5000))
	all = append(append(slices.Clone(shards[0]), shards[1]...), catalog)
	return shards, catalog, all
}

// blobsOf are the distinct blobs (not manifests) of imgs.
func blobsOf(imgs []testImage) map[digest.Digest]int64 {
	out := map[digest.Digest]int64{}
	for _, img := range imgs {
		for _, b := range img.blobs {
			out[digest.FromBytes(b)] = int64(len(b))
		}
	}
	return out
}

// writeShard writes one shard of a sharded archive into dir.
func writeShard(t *testing.T, dir string, index int, imgs []testImage, elsewhere endpoint.HeldElsewhere, chunkSize int64) *ShardRecord {
	t.Helper()
	ctx := context.Background()
	w, err := NewWriter(dir, WriterOptions{Part: ShardPart(index, 2), Elsewhere: elsewhere, ChunkSize: chunkSize})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, img := range imgs {
		push(t, ctx, w, img)
	}
	meta := metaFor(imgs)
	meta.Batch = 1
	rec, err := w.FinishShard(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestShardedArchive writes an archive as two shards and a finish part, and
// checks the result is an ordinary archive holding what the unsharded archive
// of the same images holds, each blob written once across the shards, the
// chunks within the chunk size, and nothing of the shards left behind. An
// assembly interrupted after its first rename is completed by ResumeAssembly.
func TestShardedArchive(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chunkSize int64
		interrupt bool
	}{
		{"one chunk per shard", DefaultChunkSize, false},
		{"small chunks", 24 << 10, false},
		// The last shard chunk has no room for the manifest: a last chunk
		// holding no blob carries it.
		{"small chunks, manifest-only last chunk", 28 << 10, false},
		{"small chunks, assembly interrupted", 28 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			shards, catalog, all := shardedSet()
			dir := filepath.Join(t.TempDir(), BatchName(1))
			// Shard 1 refers to what shard 0 owns: the shared base and app0's blobs.
			own0 := blobsOf(shards[0])
			elsewhere1 := endpoint.HeldElsewhere{}
			for d := range blobsOf(shards[1]) {
				if _, ok := own0[d]; ok {
					elsewhere1[d] = ""
				}
			}
			recs := []*ShardRecord{
				writeShard(t, dir, 0, shards[0], nil, tc.chunkSize),
				writeShard(t, dir, 1, shards[1], elsewhere1, tc.chunkSize),
			}
			var shardBytes int64
			written := map[digest.Digest]bool{}
			for _, r := range recs {
				shardBytes += r.BlobBytes()
				for _, b := range r.Blobs {
					if written[b.Digest] {
						t.Errorf("blob %s written by two shards", b.Digest)
					}
					written[b.Digest] = true
				}
			}
			var unique int64
			for _, s := range blobsOf(append(slices.Clone(shards[0]), shards[1]...)) {
				unique += s
			}
			if shardBytes != unique {
				t.Errorf("shards wrote %d blob bytes, their images have %d distinct", shardBytes, unique)
			}
			if _, err := NewWriter(dir, WriterOptions{}); err == nil || !strings.Contains(err.Error(), "holds the shards") {
				t.Errorf("an ordinary writer into the shards' batch: %v", err)
			}
			got, err := ReadShards(dir)
			if err != nil || len(got.Done) != 2 || len(got.Started) != 0 {
				t.Fatalf("ReadShards: %v %+v", err, got)
			}

			fromShards := endpoint.HeldElsewhere{}
			for _, r := range got.Done {
				for _, b := range r.Blobs {
					fromShards[b.Digest] = ""
				}
			}
			w, err := NewWriter(dir, WriterOptions{Part: FinishPart, Elsewhere: fromShards, ChunkSize: tc.chunkSize})
			if err != nil {
				t.Fatal(err)
			}
			push(t, ctx, w, catalog)
			meta := metaFor(all)
			meta.Batch = 1
			if tc.interrupt {
				beforeAssembly = func(context.Context) error { return context.Canceled }
				defer func() { beforeAssembly = func(ctx context.Context) error { return ctx.Err() } }()
			}
			m, err := w.FinishSharded(ctx, meta, got.Done)
			w.Close()
			if tc.interrupt {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled FinishSharded: %v", err)
				}
				// The journal is written: do its first step, as a run killed
				// after its first rename would have.
				var a assembly
				if err := json.Unmarshal(readFile(t, filepath.Join(dir, stagingDirName, assemblyName)), &a); err != nil {
					t.Fatal(err)
				}
				first := a
				first.Steps, first.Remove = a.Steps[:1], nil
				if err := first.complete(dir); err != nil {
					t.Fatal(err)
				}
				if bs, _ := Batches(filepath.Dir(dir)); len(bs) != 1 || bs[0].Finished {
					t.Fatalf("a half-assembled batch counts as finished: %+v", bs)
				}
				m, err = ResumeAssembly(dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			if m == nil {
				t.Fatal("no manifest")
			}
			if _, err := Verify(ctx, dir); err != nil {
				t.Fatalf("verify the sharded archive: %v", err)
			}
			if left, _ := shardFiles(dir); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
			if bs, _ := Batches(filepath.Dir(dir)); len(bs) != 1 || !bs[0].Finished {
				t.Errorf("batches: %+v", bs)
			}
			for _, c := range chunkFiles(t, dir) {
				if info, _ := os.Stat(filepath.Join(dir, c)); info.Size() > tc.chunkSize {
					t.Errorf("chunk %s is %d bytes, more than %d", c, info.Size(), tc.chunkSize)
				}
			}
			if last := m.Chunks[len(m.Chunks)-1]; tc.chunkSize == 28<<10 && last.Blobs != 0 {
				t.Errorf("last chunk holds %d blobs, want the manifest-only chunk", last.Blobs)
			}
			if tc.chunkSize < DefaultChunkSize && len(m.Chunks) < 4 {
				t.Errorf("%d chunks; small chunks should give several per shard", len(m.Chunks))
			}

			// The same content as the unsharded archive.
			plain := writeArchive(t, t.TempDir(), WriterOptions{ChunkSize: tc.chunkSize}, all)
			plain.Batch = 0
			if m.TotalBlobBytes() != plain.TotalBlobBytes() || len(m.Blobs) != len(plain.Blobs) || len(m.Tags) != len(plain.Tags) {
				t.Errorf("sharded: %d blobs %d bytes %d tags; unsharded: %d blobs %d bytes %d tags",
					len(m.Blobs), m.TotalBlobBytes(), len(m.Tags), len(plain.Blobs), plain.TotalBlobBytes(), len(plain.Tags))
			}
			if m.ArchiveID == plain.ArchiveID {
				t.Error("the sharded archive has the unsharded archive's id, though its chunks differ")
			}
			r, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			dst := newMemDest()
			if err := pull(ctx, r, dst); err != nil {
				t.Fatal(err)
			}
			for _, img := range all {
				if mf, ok := dst.manifests[img.repo+":"+img.tag]; !ok || mf.Digest != img.top.Digest {
					t.Errorf("%s:%s not pulled from the sharded archive", img.repo, img.tag)
				}
				for _, b := range img.blobs {
					if _, ok := dst.blobs[img.repo][digest.FromBytes(b)]; !ok {
						t.Errorf("%s: blob %s not pulled", img.repo, digest.FromBytes(b))
					}
				}
			}
		})
	}
}

// TestShardResume: a shard interrupted after staging part of its images, run
// again, writes only what is missing and leaves the same record.
func TestShardResume(t *testing.T) {
	ctx := context.Background()
	shards, _, _ := shardedSet()
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{Part: ShardPart(0, 2)})
	if err != nil {
		t.Fatal(err)
	}
	push(t, ctx, w, shards[0][0])
	w.Close()
	w, err = NewWriter(dir, WriterOptions{Part: ShardPart(0, 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	first := digest.FromBytes(shards[0][0].blobs[1])
	if ok, _ := w.BlobExists(ctx, shards[0][0].repo, endpoint.Descriptor{Digest: first, Size: int64(len(shards[0][0].blobs[1]))}); !ok {
		t.Fatalf("resumed shard lost staged blob %s", first)
	}
	for _, img := range shards[0] {
		push(t, ctx, w, img)
	}
	rec, err := w.FinishShard(ctx, metaFor(shards[0]))
	if err != nil {
		t.Fatal(err)
	}
	again, err := ReadShard(dir, 0, 2)
	if err != nil || again == nil || again.BlobBytes() != rec.BlobBytes() || len(again.Manifests) != len(rec.Manifests) {
		t.Fatalf("ReadShard: %v %+v", err, again)
	}
	if none, err := ReadShard(dir, 1, 2); none != nil || err != nil {
		t.Errorf("ReadShard of a shard that did not run: %v %v", none, err)
	}
	// A shard never writes into a batch that holds an archive.
	plainDir := t.TempDir()
	writeArchive(t, plainDir, WriterOptions{}, shards[1])
	if _, err := NewWriter(plainDir, WriterOptions{Part: ShardPart(1, 2)}); !errors.Is(err, ErrArchiveExists) {
		t.Errorf("a shard writer into a finished archive: %v", err)
	}
}
