package archive

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
)

// An archive whose blobs, manifests, indexes and checksums were all swapped
// consistently (another archive's content under the ID announced) passes
// every checksum; the ID computed from the content catches it, in Open (so
// disk-to-mirror) and Verify (archive verify).
func TestArchiveIdentityCheckedOnRead(t *testing.T) {
	ctx := context.Background()
	announced, other := t.TempDir(), t.TempDir()
	a := writeArchive(t, announced, WriterOptions{}, testSet(1))
	b := writeArchive(t, other, WriterOptions{}, testSet(2))
	if a.ArchiveID == b.ArchiveID {
		t.Fatal("two contents, one ID")
	}
	for _, dir := range []string{announced, other} {
		r, err := Open(dir)
		if err != nil {
			t.Fatalf("an archive as written: %v", err)
		}
		if id, _ := r.ArchiveManifest().ContentID(); id != r.ArchiveManifest().ArchiveID {
			t.Fatalf("content ID %s, recorded %s", id, r.ArchiveManifest().ArchiveID)
		}
		r.Close()
	}
	mirrortest.ForgeArchiveID(t, other, b.ArchiveID, a.ArchiveID)
	// The forgery is consistent: every chunk verifies on its own, under the
	// announced ID.
	for _, c := range chunkFiles(t, other) {
		cr, err := VerifyChunk(ctx, filepath.Join(other, c))
		if err != nil {
			t.Fatalf("forged chunk %s does not verify on its own (the forgery is not consistent): %v", c, err)
		}
		if cr.ArchiveID != a.ArchiveID {
			t.Fatalf("forged chunk %s claims %s", c, cr.ArchiveID)
		}
	}
	want := "records archive ID " + a.ArchiveID + ", but its content makes archive ID " + b.ArchiveID
	_, err := Open(other)
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open of the forged archive: %v, want an error saying %q", err, want)
	}
	if _, err := Verify(ctx, other); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Verify of the forged archive: %v, want an error saying %q", err, want)
	}
	// Forged back to its own ID, it is the archive it was.
	mirrortest.ForgeArchiveID(t, other, a.ArchiveID, b.ArchiveID)
	if _, err := Verify(ctx, other); err != nil {
		t.Fatalf("the archive forged back: %v", err)
	}
}

// What the writer is given in forms JSON does not keep apart (an empty list of
// earlier batches, a configuration with spaces) gives an ID that reading
// computes again.
func TestArchiveIdentityRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(*Meta)
	}{
		{"empty buildsOn", func(m *Meta) { m.BuildsOn = []BatchRef{} }},
		{"buildsOn", func(m *Meta) {
			m.BuildsOn = []BatchRef{{Batch: 1, ArchiveID: "0123456789abcdef0123456789abcdef", Dir: "/t/batch-0001"}}
			m.Batch = 2
		}},
		{"config with spaces, no catalogs", func(m *Meta) { m.Config = []byte("{ \"a\" : [ 1, 2 ] }\n"); m.Catalogs = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			imgs := testSet(3)
			w, err := NewWriter(dir, WriterOptions{ChunkSize: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range imgs {
				push(t, ctx, w, img)
			}
			meta := metaFor(imgs)
			tc.edit(&meta)
			if _, err := w.Finish(ctx, meta); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(ctx, dir); err != nil {
				t.Fatalf("an archive as written: %v", err)
			}
		})
	}
}
