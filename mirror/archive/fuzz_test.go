package archive

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// fuzzSeed returns the bytes of a valid one-chunk archive with a few small blobs.
func fuzzSeed(f *testing.F) []byte {
	rng := testRNG(99)
	dir := f.TempDir()
	img := makeImage(rng, "ns/a", "v1", randBytes(rng, 300), randBytes(rng, 700))
	writeArchive(f, dir, WriterOptions{}, []testImage{img})
	return readFile(f, filepath.Join(dir, ChunkName(1)))
}

func addSeeds(f *testing.F) {
	seed := fuzzSeed(f)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add(seed[:1536])
	flipped := append([]byte(nil), seed...)
	flipped[700] ^= 0xff
	f.Add(flipped)
	f.Add([]byte{})
}

// FuzzVerifyChunk: VerifyChunk never panics, and when it accepts a chunk every
// blob in it matches its digest.
func FuzzVerifyChunk(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, ChunkName(1))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyChunk(context.Background(), p); err != nil {
			return
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		s, err := scanChunk(fh, ChunkName(1))
		if err != nil {
			t.Fatalf("VerifyChunk accepted what scanChunk rejects: %v", err)
		}
		for _, b := range s.blobs {
			got, err := digest.FromReader(io.NewSectionReader(fh, b.Offset, b.Size))
			if err != nil || got != b.Digest {
				t.Fatalf("VerifyChunk accepted blob %s with content %s", b.Digest, got)
			}
		}
	})
}

// FuzzOpen: Open and the Reader never panic, and never return data that does not
// match its digest without an error.
func FuzzOpen(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ChunkName(1)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(dir)
		if err != nil {
			return
		}
		defer r.Close()
		for _, tg := range r.Tags() {
			mf, err := r.Manifest(ctx, tg.Repo, tg.Reference)
			if err == nil && digest.FromBytes(mf.Raw) != tg.Digest {
				t.Fatalf("Manifest returned unverified content for %s", tg.Digest)
			}
		}
		for _, b := range r.ArchiveManifest().Blobs {
			rc, err := r.Blob(ctx, "", endpoint.Descriptor{Digest: b.Digest, Size: b.Size})
			if err != nil {
				continue
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err == nil && digest.FromBytes(got) != b.Digest {
				t.Fatalf("Blob returned unverified content for %s", b.Digest)
			}
		}
		_, _ = Verify(ctx, dir)
		_, _ = Describe(dir)
	})
}
