package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// craftChunk builds a tar with one entry described by hdr and data.
func craftChunk(t *testing.T, hdr *tar.Header, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	if hdr.Size > int64(len(data)) {
		// an oversized header: the claimed data never follows
		buf.Write(data)
		buf.Write(make([]byte, 2048))
		return buf.Bytes()
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	opts := WriterOptions{ChunkSize: 28 << 10}
	m := writeArchive(t, base, opts, testSet(10))
	other := t.TempDir()
	writeArchive(t, other, opts, testSet(11))
	if len(m.Chunks) < 3 || len(chunkFiles(t, other)) < 2 {
		t.Fatalf("need 3 chunks, got %d and %d", len(m.Chunks), len(chunkFiles(t, other)))
	}
	const victim = "airlock_000002.tar"
	var inVictim []BlobRecord
	for _, b := range m.Blobs {
		if b.Chunk == 2 {
			inVictim = append(inVictim, b)
		}
	}
	if len(inVictim) < 2 {
		t.Fatalf("chunk 2 holds %d blobs", len(inVictim))
	}
	target := inVictim[1]
	blobHex := target.Digest.Encoded()
	path := func(dir string) string { return filepath.Join(dir, victim) }
	mustWrite := func(p string, b []byte) {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name   string
		mutate func(dir string)
		// want are substrings of the error of Verify (and of Open when openFails).
		want      []string
		openFails bool
	}{
		{"truncated in a blob", func(dir string) {
			if err := os.Truncate(path(dir), target.Offset+target.Size/2); err != nil {
				t.Fatal(err)
			}
		}, []string{victim, target.Digest.String(), "truncated"}, true},
		{"truncated at a block boundary", func(dir string) {
			if err := os.Truncate(path(dir), target.Offset); err != nil {
				t.Fatal(err)
			}
		}, []string{victim, target.Digest.String()}, true},
		{"flipped byte in a blob", func(dir string) {
			b := readFile(t, path(dir))
			b[target.Offset+target.Size/3] ^= 0x40
			mustWrite(path(dir), b)
		}, []string{victim, target.Digest.String(), "damaged"}, false},
		{"flipped byte in a tar header", func(dir string) {
			b := readFile(t, path(dir))
			b[target.Offset-blockSize+20] ^= 0x01 // in the name field
			mustWrite(path(dir), b)
		}, []string{victim}, true},
		{"flipped byte in padding", func(dir string) {
			b := readFile(t, path(dir))
			if padding(target.Size) == 0 {
				t.Skip("no padding")
			}
			b[target.Offset+target.Size] = 1
			mustWrite(path(dir), b)
		}, []string{victim, "damaged"}, false},
		{"flipped byte in the index", func(dir string) {
			b := readFile(t, path(dir))
			i := bytes.Index(b, []byte(`"archiveID":"`))
			b[i+14] ^= 0x01
			mustWrite(path(dir), b)
		}, []string{victim}, true},
		{"missing chunk", func(dir string) {
			os.Remove(path(dir))
		}, []string{victim, "missing"}, true},
		{"missing last chunk", func(dir string) {
			os.Remove(filepath.Join(dir, ChunkName(len(m.Chunks))))
		}, []string{ChunkName(len(m.Chunks)), "missing"}, true},
		{"extra chunk", func(dir string) {
			mustWrite(filepath.Join(dir, ChunkName(len(m.Chunks)+1)), readFile(t, path(dir)))
		}, []string{ChunkName(len(m.Chunks) + 1)}, true},
		{"chunk from another archive", func(dir string) {
			mustWrite(path(dir), readFile(t, filepath.Join(other, victim)))
		}, []string{victim, "another archive"}, true},
		{"trailing data", func(dir string) {
			mustWrite(path(dir), append(readFile(t, path(dir)), make([]byte, 512)...))
		}, []string{victim, "trailing data"}, true},
		{"entry with ..", func(dir string) {
			mustWrite(path(dir), craftChunk(t, &tar.Header{Typeflag: tar.TypeReg, Name: "blobs/sha256/../../../etc/passwd", Size: 4, Mode: 0o644}, []byte("root")))
		}, []string{victim, ".."}, true},
		{"absolute path", func(dir string) {
			mustWrite(path(dir), craftChunk(t, &tar.Header{Typeflag: tar.TypeReg, Name: "/blobs/sha256/" + blobHex, Size: 4, Mode: 0o644}, []byte("root")))
		}, []string{victim, "absolute"}, true},
		{"symlink", func(dir string) {
			mustWrite(path(dir), craftChunk(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "blobs/sha256/" + blobHex, Linkname: "/etc/shadow", Mode: 0o777}, nil))
		}, []string{victim, target.Digest.String(), "link"}, true},
		{"oversized header", func(dir string) {
			mustWrite(path(dir), craftChunk(t, &tar.Header{Typeflag: tar.TypeReg, Name: "blobs/sha256/" + blobHex, Size: 1 << 40, Mode: 0o644}, []byte("x")))
		}, []string{victim, target.Digest.String(), "claims"}, true},
		{"non-canonical header", func(dir string) {
			mustWrite(path(dir), craftChunk(t, &tar.Header{Typeflag: tar.TypeReg, Name: "blobs/sha256/" + blobHex, Size: 1, Mode: 0o755, Uid: 1000}, []byte("x")))
		}, []string{victim, target.Digest.String(), "canonical"}, true},
		{"not a tar", func(dir string) {
			mustWrite(path(dir), bytes.Repeat([]byte("garbage!"), 512))
		}, []string{victim}, true},
		{"empty file", func(dir string) {
			mustWrite(path(dir), nil)
		}, []string{victim}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, base, dir)
			tc.mutate(dir)
			_, err := Verify(ctx, dir)
			if err == nil {
				t.Fatal("Verify accepted a damaged archive")
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Verify error lacks %q: %v", s, err)
				}
			}
			r, oerr := Open(dir)
			if tc.openFails {
				if oerr == nil {
					r.Close()
					t.Fatal("Open accepted a damaged archive")
				}
				if !strings.Contains(oerr.Error(), tc.want[0]) {
					t.Errorf("Open error lacks %q: %v", tc.want[0], oerr)
				}
				return
			}
			if oerr != nil {
				t.Fatalf("Open: %v", oerr)
			}
			defer r.Close()
			// The reader never hands out a damaged blob as if it were good. Damaged
			// padding touches no blob: the blobs stream fine and Verify reports it.
			if err := pull(ctx, r, newMemDest()); tc.name == "flipped byte in padding" {
				if err != nil {
					t.Fatalf("intact blobs not readable: %v", err)
				}
			} else if err == nil {
				t.Fatal("disk-to-mirror accepted a damaged archive")
			} else if tc.name == "flipped byte in a blob" && (!strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), target.Digest.String())) {
				t.Errorf("read error does not name chunk and blob: %v", err)
			}
		})
	}
}

// A damaged manifest blob is never returned by Reader.Manifest.
func TestReaderManifestVerified(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	imgs := testSet(12)
	m := writeArchive(t, dir, WriterOptions{}, imgs)
	var rec BlobRecord
	for _, b := range m.Blobs {
		if b.Digest == imgs[0].top.Digest {
			rec = b
		}
	}
	p := filepath.Join(dir, ChunkName(rec.Chunk))
	b := readFile(t, p)
	b[rec.Offset+5] ^= 0x20
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mf, err := r.Manifest(ctx, imgs[0].repo, imgs[0].tag)
	if err == nil || !errors.Is(err, ErrCorrupt) || mf.Raw != nil {
		t.Fatalf("damaged manifest returned: %q, %v", mf.Raw, err)
	}
	// A blob read stops with an error, not io.EOF.
	rc, err := r.Blob(ctx, imgs[0].repo, endpoint.Descriptor{Digest: rec.Digest})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a damaged blob: %v", err)
	}
	if _, err := r.Blob(ctx, "x", endpoint.Descriptor{Digest: rec.Digest, Size: rec.Size + 1}); err == nil {
		t.Error("size mismatch accepted")
	}
	_ = digest.Canonical
}
