package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// planBlobs are the layers and configs of imgs, as the plan knows them before
// the copy (Expect).
func planBlobs(imgs []testImage) []endpoint.Descriptor {
	var out []endpoint.Descriptor
	for _, img := range imgs {
		for _, b := range img.blobs {
			out = append(out, endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))})
		}
	}
	return out
}

func distinct(ds []endpoint.Descriptor) map[digest.Digest]bool {
	out := map[digest.Digest]bool{}
	for _, d := range ds {
		out[d.Digest] = true
	}
	return out
}

// expectingWriter is a Writer in dir told (Expect) of every blob and manifest
// of imgs before anything is pushed: the layout a planned mirror-to-disk makes.
func expectingWriter(t testing.TB, dir string, opts WriterOptions, imgs []testImage) *Writer {
	t.Helper()
	w, err := NewWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Expect(append(planBlobs(imgs), planManifests(imgs)...)); err != nil {
		t.Fatal(err)
	}
	return w
}

// planManifests are the manifests of imgs, each as a blob of its own.
func planManifests(imgs []testImage) []endpoint.Descriptor {
	var out []endpoint.Descriptor
	for _, img := range imgs {
		for _, m := range append([]endpoint.Manifest{img.top}, img.children...) {
			out = append(out, endpoint.Descriptor{MediaType: m.MediaType, Digest: m.Digest, Size: int64(len(m.Raw))})
		}
	}
	return out
}

// stagedCount is how many blobs the staging area holds as files.
func stagedCount(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, stagingDirName, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// manifestCount is how many distinct manifests imgs have.
func manifestCount(imgs []testImage) int {
	seen := map[digest.Digest]bool{}
	for _, img := range imgs {
		seen[img.top.Digest] = true
		for _, c := range img.children {
			seen[c.Digest] = true
		}
	}
	return len(seen)
}

// checkArchive verifies the archive in dir, reads every image back and
// compares its archive ID with want's.
func checkArchive(t *testing.T, dir string, imgs []testImage, want *Manifest) *Manifest {
	t.Helper()
	ctx := context.Background()
	if _, err := Verify(ctx, dir); err != nil {
		t.Fatal(err)
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
	for _, img := range imgs {
		for _, b := range img.blobs {
			if got := dst.blobs[img.repo][digest.FromBytes(b)]; !bytes.Equal(got, b) {
				t.Errorf("%s: blob %s not read back", img.repo, digest.FromBytes(b))
			}
		}
	}
	m := r.ArchiveManifest()
	if want != nil && m.ArchiveID != want.ArchiveID {
		t.Errorf("archive ID %s, written without a layout before the copy %s", m.ArchiveID, want.ArchiveID)
	}
	if _, err := os.Stat(filepath.Join(dir, stagingDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging area left: %v", err)
	}
	return m
}

func TestExpectWritesBlobsInPlace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chunkSize int64
		// again: the chunks laid out before the copy cannot be kept (no room
		// for the archive manifest) and are written again from the staging area.
		again bool
		// manifests: the layout names the manifests too: nothing is staged.
		manifests bool
	}{
		{name: "one chunk", chunkSize: 0},
		{name: "one chunk, manifests laid out", chunkSize: 0, manifests: true},
		{name: "several chunks, manifests laid out", chunkSize: 64 << 10, manifests: true},
		{name: "several chunks", chunkSize: 64 << 10},
		{name: "no room for the manifest", chunkSize: 16 << 10, again: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			imgs := testSet(5)
			rng := testRNG(5)
			for i := range 4 {
				imgs = append(imgs, makeImage(rng, "ns/big", fmt.Sprintf("v%d", i), randBytes(rng, 20<<10)))
			}
			want := writeArchive(t, t.TempDir(), WriterOptions{ChunkSize: tc.chunkSize}, imgs)
			dir := t.TempDir()
			var logs bytes.Buffer
			w, err := NewWriter(dir, WriterOptions{ChunkSize: tc.chunkSize, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			expect := planBlobs(imgs)
			staged := manifestCount(imgs)
			if tc.manifests {
				expect, staged = append(expect, planManifests(imgs)...), 0
			}
			if err := w.Expect(expect); err != nil {
				t.Fatal(err)
			}
			pre := len(w.pre)
			for _, img := range imgs {
				push(t, ctx, w, img)
			}
			if n := stagedCount(t, dir); n != staged {
				t.Errorf("%d blobs staged, want %d: the others go into their chunks", n, staged)
			}
			if _, err := w.Finish(ctx, metaFor(imgs)); err != nil {
				t.Fatal(err)
			}
			m := checkArchive(t, dir, imgs, want)
			if again := strings.Contains(logs.String(), "written again"); again != tc.again {
				t.Errorf("laid out again: %v, want %v (%s)", again, tc.again, logs.String())
			}
			if want := pre + min(staged, 1); !tc.again && len(m.Chunks) != want {
				t.Errorf("%d chunks: want the %d laid out before the copy and one for the staged manifests if any", len(m.Chunks), pre)
			}
			if tc.chunkSize > 0 {
				for _, c := range m.Chunks {
					if c.Blobs == 1 {
						continue // an oversized blob gets a chunk of its own
					}
					if info, err := os.Stat(filepath.Join(dir, c.Name)); err != nil || info.Size() > tc.chunkSize {
						t.Errorf("%s: %v bytes over %d", c.Name, info.Size(), tc.chunkSize)
					}
				}
			}
		})
	}
}

// TestExpectLateBlob: a blob the layout did not name (an attachment found
// during the copy) is staged and laid out after the chunks laid out before.
func TestExpectLateBlob(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(6)
	want := writeArchive(t, t.TempDir(), WriterOptions{}, imgs)
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Expect(planBlobs(imgs[:2])); err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		push(t, ctx, w, img)
	}
	if _, err := w.Finish(ctx, metaFor(imgs)); err != nil {
		t.Fatal(err)
	}
	m := checkArchive(t, dir, imgs, want)
	if len(m.Chunks) != 2 {
		t.Errorf("%d chunks, want the one laid out before the copy and one for the rest", len(m.Chunks))
	}
}

// TestExpectUnwrittenBlob: an image of the layout that failed leaves a hole
// in its chunk; Finish writes that chunk again without it.
func TestExpectUnwrittenBlob(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(8)
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Expect(planBlobs(imgs)); err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs[1:] {
		push(t, ctx, w, img)
	}
	want := writeArchive(t, t.TempDir(), WriterOptions{}, imgs[1:])
	if _, err := w.Finish(ctx, metaFor(imgs[1:])); err != nil {
		t.Fatal(err)
	}
	checkArchive(t, dir, imgs[1:], want)
}

// failingReader returns its bytes up to n, then fails.
type failingReader struct {
	r io.Reader
	n int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection reset")
	}
	p = p[:min(len(p), f.n)]
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

// largest is the largest layer of imgs.
func largest(imgs []testImage) (img testImage, b []byte) {
	for _, im := range imgs {
		for _, x := range im.blobs {
			if len(x) > len(b) {
				img, b = im, x
			}
		}
	}
	return img, b
}

// TestExpectResumeMidBlob: a blob cut off midway keeps its bytes in its
// slot; the next run hashes them back and takes only the rest.
func TestExpectResumeMidBlob(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(9)
	want := writeArchive(t, t.TempDir(), WriterOptions{}, imgs)
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Expect(planBlobs(imgs)); err != nil {
		t.Fatal(err)
	}
	img, big := largest(imgs)
	cut := cutBlob(t, ctx, w, img.repo, big)
	w.Close() // interrupted

	w2, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Expect(planBlobs(imgs)); err != nil {
		t.Fatal(err)
	}
	resumeBlob(t, ctx, w2, img.repo, big, cut)
	for _, img := range imgs {
		push(t, ctx, w2, img)
	}
	if _, err := w2.Finish(ctx, metaFor(imgs)); err != nil {
		t.Fatal(err)
	}
	checkArchive(t, dir, imgs, want)
}

// cutBlob starts transferring blob b into w and cuts it off midway: the
// number of bytes sent.
func cutBlob(t *testing.T, ctx context.Context, w *Writer, repo string, b []byte) int {
	t.Helper()
	up, err := w.StartBlob(ctx, repo, endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))})
	if err != nil || up == nil {
		t.Fatal(up, err)
	}
	cut := len(b) / 2
	if err := up.Write(ctx, &failingReader{bytes.NewReader(b), cut}); err == nil {
		t.Fatal("a broken transfer succeeded")
	}
	return cut
}

// resumeBlob transfers blob b into w again, after its first cut bytes, which
// w must hold.
func resumeBlob(t *testing.T, ctx context.Context, w *Writer, repo string, b []byte, cut int) {
	t.Helper()
	up, err := w.StartBlob(ctx, repo, endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))})
	if err != nil || up == nil {
		t.Fatal(up, err)
	}
	ru := up.(endpoint.ResumableUpload)
	held, h, err := ru.Held()
	if err != nil || held != int64(cut) || h == nil {
		t.Fatalf("held %d (%v), want %d", held, err, cut)
	}
	if err := ru.WriteFrom(ctx, bytes.NewReader(b[cut:]), held); err != nil {
		t.Fatal(err)
	}
}

// TestExpectResumeKeepsPlaced: blobs written into their slots before the run
// stopped are not fetched again; a chunk file that lost its headers (the run
// stopped between laying it out and writing) gets them back; a placed blob
// whose bytes were damaged on disk is found by Finish, and the next run
// fetches it again.
func TestExpectResumeKeepsPlaced(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(10)
	want := writeArchive(t, t.TempDir(), WriterOptions{}, imgs)
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Expect(planBlobs(imgs)); err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs[:2] {
		push(t, ctx, w, img)
	}
	w.Close()
	// The headers of the blobs not written yet are lost.
	chunk := filepath.Join(dir, ChunkName(1))
	raw := readFile(t, chunk)
	for _, img := range imgs[2:] {
		for _, b := range img.blobs {
			s := w.slots[digest.FromBytes(b)]
			if s.chunk != "" {
				clear(raw[s.offset-blockSize : s.offset])
			}
		}
	}
	if err := os.WriteFile(chunk, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	resume := func() (*Writer, *countingDest) {
		w, err := NewWriter(dir, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Expect(planBlobs(imgs)); err != nil {
			t.Fatal(err)
		}
		c := &countingDest{Destination: w}
		for _, img := range imgs {
			push(t, ctx, c, img)
		}
		return w, c
	}
	w2, c := resume()
	if n, want := c.puts.Load(), int64(len(distinct(planBlobs(imgs)))-len(distinct(planBlobs(imgs[:2])))); n != want {
		t.Errorf("%d blobs fetched again, want only the %d of the images not copied", n, want)
	}
	// Damage a blob the first run placed.
	first := digest.FromBytes(imgs[0].blobs[1])
	s := w2.slots[first]
	f, err := os.OpenFile(chunk, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("XX"), s.offset); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := w2.Finish(ctx, metaFor(imgs)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), first.String()) {
		t.Fatalf("Finish with a damaged blob: %v", err)
	}
	w2.Close()
	w3, c3 := resume()
	if n := c3.puts.Load(); n != 1 {
		t.Errorf("%d blobs fetched again, want the damaged one", n)
	}
	if _, err := w3.Finish(ctx, metaFor(imgs)); err != nil {
		t.Fatal(err)
	}
	checkArchive(t, dir, imgs, want)
}

// TestExpectSlotOverflow: a stream longer than its descriptor never writes
// past its slot.
func TestExpectSlotOverflow(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(11)
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Expect(planBlobs(imgs)); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, filepath.Join(dir, ChunkName(1)))
	b := imgs[0].blobs[1]
	d := endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
	longer := append(append([]byte(nil), b...), bytes.Repeat([]byte{0xee}, 4096)...)
	if err := w.PutBlob(ctx, imgs[0].repo, d, bytes.NewReader(longer)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a longer stream: %v", err)
	}
	after := readFile(t, filepath.Join(dir, ChunkName(1)))
	s := w.slots[d.Digest]
	if !bytes.Equal(before[:s.offset], after[:s.offset]) || !bytes.Equal(before[s.offset+s.size:], after[s.offset+s.size:]) {
		t.Error("bytes outside the blob's slot changed")
	}
	if ok, _ := w.BlobExists(ctx, imgs[0].repo, d); ok {
		t.Error("a blob that did not verify counts as written")
	}
}

// FuzzPreLayout: parsePreLayout never panics, and what it accepts has every
// blob inside its chunk, after its header, not overlapping the one before.
func FuzzPreLayout(f *testing.F) {
	f.Add([]byte(`{"chunkSize":1048576,"chunks":[{"number":1,"payloadSize":2048,"blobs":[{"digest":"sha256:` + strings.Repeat("a", 64) + `","size":100,"offset":512}]}]}`))
	f.Add([]byte(`{"chunkSize":1,"chunks":[]}`))
	f.Add([]byte(`{"chunkSize":1048576,"chunks":[{"number":1,"payloadSize":100,"blobs":[{"digest":"sha256:` + strings.Repeat("b", 64) + `","size":100,"offset":0}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := parsePreLayout(data)
		if err != nil {
			return
		}
		for _, c := range l.Chunks {
			var end int64
			for _, b := range c.Blobs {
				if b.Offset < end+blockSize || b.Offset+b.Size > c.PayloadSize || b.Size < 0 {
					t.Fatalf("accepted blob %s at %d size %d in a region of %d after %d", b.Digest, b.Offset, b.Size, c.PayloadSize, end)
				}
				end = b.Offset + b.Size + padding(b.Size)
			}
		}
	})
}

// TestExpectShippedManifests: an incremental batch writes again the manifests
// an earlier batch shipped (Finish always writes manifests); the layout before
// the copy gives them their slots too, so the batch is one chunk with nothing
// staged, as a batch whose manifests are all new.
func TestExpectShippedManifests(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(4)
	first, second := imgs[:2], imgs
	m1 := writeArchive(t, t.TempDir(), WriterOptions{}, first)
	shipped := ShippedSet{}
	for _, b := range m1.Blobs {
		shipped[b.Digest] = Origin{ArchiveID: m1.ArchiveID}
	}
	dir := t.TempDir()
	w := expectingWriter(t, dir, WriterOptions{Shipped: shipped}, second)
	for _, img := range second {
		push(t, ctx, w, img)
	}
	if n := stagedCount(t, dir); n != 0 {
		t.Errorf("%d blobs staged: the manifests the first batch shipped had no slot", n)
	}
	m2, err := w.Finish(ctx, metaFor(second))
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Chunks) != 1 {
		t.Errorf("%d chunks, want 1", len(m2.Chunks))
	}
	if _, err := Verify(ctx, dir); err != nil {
		t.Fatal(err)
	}
}
