package archive

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// benchImages is ~64 MiB in 16 layers of 4 MiB.
func benchImages() []testImage {
	rng := testRNG(1000)
	var layers [][]byte
	for range 16 {
		layers = append(layers, randBytes(rng, 4<<20))
	}
	return []testImage{makeImage(rng, "ns/bench", "v1", layers...)}
}

func totalBytes(imgs []testImage) int64 {
	var n int64
	for _, img := range imgs {
		for _, b := range img.blobs {
			n += int64(len(b))
		}
	}
	return n
}

// BenchmarkArchiveWrite measures mirror-to-disk into an archive (stage + verify +
// chunk + sync), in MB/s of blob data, with 16 MiB chunks.
func BenchmarkArchiveWrite(b *testing.B) {
	imgs := benchImages()
	b.SetBytes(totalBytes(imgs))
	for b.Loop() {
		writeArchive(b, b.TempDir(), WriterOptions{ChunkSize: 16 << 20}, imgs)
	}
}

// BenchmarkArchiveRead measures disk-to-mirror reads: every blob streamed out of
// the chunks and verified.
func BenchmarkArchiveRead(b *testing.B) {
	ctx := context.Background()
	imgs := benchImages()
	dir := b.TempDir()
	writeArchive(b, dir, WriterOptions{ChunkSize: 16 << 20}, imgs)
	r, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(r.ArchiveManifest().TotalBlobBytes())
	buf := make([]byte, 1<<20)
	for b.Loop() {
		for _, bl := range r.ArchiveManifest().Blobs {
			rc, err := r.Blob(ctx, "", endpoint.Descriptor{Digest: bl.Digest, Size: bl.Size})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyBuffer(io.Discard, rc, buf); err != nil {
				b.Fatal(err)
			}
			rc.Close()
		}
	}
}

// BenchmarkArchiveVerify measures `airlock archive verify`.
func BenchmarkArchiveVerify(b *testing.B) {
	imgs := benchImages()
	dir := b.TempDir()
	m := writeArchive(b, dir, WriterOptions{ChunkSize: 16 << 20}, imgs)
	b.SetBytes(m.TotalBlobBytes())
	for b.Loop() {
		if _, err := Verify(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlainCopy is the reference: io.Copy of the same bytes file to file.
func BenchmarkPlainCopy(b *testing.B) {
	imgs := benchImages()
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, img := range imgs {
		for _, bl := range img.blobs {
			f.Write(bl)
		}
	}
	f.Close()
	b.SetBytes(totalBytes(imgs))
	for b.Loop() {
		in, _ := os.Open(src)
		out, _ := os.Create(filepath.Join(dir, "dst"))
		if _, err := io.Copy(out, in); err != nil {
			b.Fatal(err)
		}
		out.Sync()
		in.Close()
		out.Close()
	}
}

// TestStageSmallBlobsAllocateLittle stages many small blobs (configs, tiny
// layers: most blobs of a large mirror) and checks what each costs in
// allocated bytes: a few times its size, not a buffer of a MiB.
func TestStageSmallBlobsAllocateLittle(t *testing.T) {
	ctx := context.Background()
	w, err := NewWriter(t.TempDir(), WriterOptions{ChunkSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rng := testRNG(7)
	const n, size = 200, 2 << 10
	blobs := make([][]byte, n)
	for i := range blobs {
		blobs[i] = randBytes(rng, size)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, b := range blobs {
		if err := w.PutBlob(ctx, "ns/small", endpoint.Descriptor{Digest: digest.FromBytes(b), Size: size}, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 64<<10 {
		t.Errorf("staging a %d-byte blob allocated %d bytes, want under 64 KiB", size, per)
	}
}
