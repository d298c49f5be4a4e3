package archive

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/syncbuf"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// putBlobs stages the layers and configs of imgs as a prefetch does, before
// their manifests are pushed.
func putBlobs(t testing.TB, ctx context.Context, w *Writer, imgs []testImage) {
	t.Helper()
	for _, img := range imgs {
		for _, b := range img.blobs {
			d := endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
			if err := w.PutBlob(ctx, img.repo, d, bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestExpectMovesStagedBlobs: blobs staged before the layout (a prefetch)
// get their slots from Expect and are moved there, so that the finished
// archive is byte for byte the one a run that laid its chunks out before
// fetching anything writes, with nothing written again at the end; also
// when the run is interrupted after the layout (the move stopped, a new
// Writer resumes).
func TestExpectMovesStagedBlobs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chunkSize int64
		ahead     int  // images whose blobs are staged before Expect
		interrupt bool // Close after Expect, resume with a new Writer
	}{
		{name: "none ahead", ahead: 0},
		{name: "some ahead", ahead: 3},
		{name: "all ahead", ahead: 9},
		{name: "some ahead, several chunks", chunkSize: 64 << 10, ahead: 4},
		{name: "some ahead, interrupted after the layout", chunkSize: 64 << 10, ahead: 4, interrupt: true},
		{name: "all ahead, interrupted after the layout", ahead: 9, interrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			imgs := testSet(21)
			rng := testRNG(21)
			for range 4 {
				imgs = append(imgs, makeImage(rng, "ns/big", "v"+string(rune('a'+rng.IntN(26))), randBytes(rng, 20<<10)))
			}
			all := append(planBlobs(imgs), planManifests(imgs)...)
			refDir, want := referenceArchive(t, WriterOptions{ChunkSize: tc.chunkSize}, imgs)

			dir := t.TempDir()
			var logs bytes.Buffer
			opts := WriterOptions{ChunkSize: tc.chunkSize, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			w, err := NewWriter(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			ahead := imgs[:min(tc.ahead, len(imgs))]
			putBlobs(t, ctx, w, ahead)
			if err := w.Expect(all); err != nil {
				t.Fatal(err)
			}
			if tc.interrupt {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if w, err = NewWriter(dir, opts); err != nil {
					t.Fatal(err)
				}
				if err := w.Expect(all); err != nil {
					t.Fatal(err)
				}
			}
			if moved, left := w.StagedBeforeLayout(); left != 0 || (!tc.interrupt && moved != len(distinct(planBlobs(ahead)))) {
				t.Errorf("moved %d, left %d staged blobs; want every one of the %d moved", moved, left, len(distinct(planBlobs(ahead))))
			}
			if n := stagedCount(t, dir); n != 0 {
				t.Errorf("%d blobs still staged after the move", n)
			}
			for _, img := range imgs {
				push(t, ctx, w, img)
			}
			m, err := w.Finish(ctx, metaFor(imgs))
			if err != nil {
				t.Fatal(err)
			}
			checkArchive(t, dir, imgs, want)
			if strings.Contains(logs.String(), "written again") {
				t.Errorf("chunks written again from the staging area:\n%s", logs.String())
			}
			if len(m.Chunks) != len(want.Chunks) {
				t.Fatalf("%d chunks, want %d", len(m.Chunks), len(want.Chunks))
			}
			sameChunkFiles(t, dir, refDir, want)
		})
	}
}

// TestExpectSlotsBlobInFlight: a blob being fetched when Expect lays the
// chunks out gets its slot, and its transfer ends by writing it there.
func TestExpectSlotsBlobInFlight(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(22)
	w, err := NewWriter(t.TempDir(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := imgs[0].blobs[1]
	d := endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
	up, err := w.StartBlob(ctx, imgs[0].repo, d)
	if err != nil || up == nil {
		t.Fatalf("StartBlob: %v, %v", up, err)
	}
	if err := w.Expect(planBlobs(imgs)); err != nil {
		t.Fatal(err)
	}
	if err := up.Write(ctx, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	if !w.inSlot(d.Digest) {
		t.Errorf("blob %s fetched during the layout is not in its slot", d.Digest)
	}
	if ok, err := w.BlobExists(ctx, imgs[0].repo, d); !ok || err != nil {
		t.Errorf("BlobExists = %v, %v", ok, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBoundStaging: before the layout, StartBlob stages blobs only while
// they fit in the free space less one chunk, and in half of it, refusing the next with
// ErrNoSpace before any byte is read; Expect lifts the bound, and what was
// staged counts as written for the space check.
func TestBoundStaging(t *testing.T) {
	ctx := context.Background()
	const chunk = 64 << 10
	rng := testRNG(23)
	blobs := [][]byte{randBytes(rng, 20<<10), randBytes(rng, 20<<10)}
	for _, tc := range []struct {
		name   string
		free   int64
		freeOK bool
		staged int // blobs staged before the layout
	}{
		{name: "half the free space: room for one", free: 50 << 10, freeOK: true, staged: 1},       // 25 KiB
		{name: "free space less a chunk: room for both", free: 200 << 10, freeOK: true, staged: 2}, // 136 KiB
		{name: "room for none", free: 30 << 10, freeOK: true, staged: 0},                           // 15 KiB
		{name: "free space unknown", freeOK: false, staged: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(t.TempDir(), WriterOptions{ChunkSize: chunk, FreeSpace: func(string) (int64, error) {
				if !tc.freeOK {
					return 0, errors.New("statfs: not supported")
				}
				return tc.free, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if bound := w.BoundStaging(); tc.freeOK != (bound >= 0) {
				t.Errorf("bound %d with the free space known: %v", bound, tc.freeOK)
			}
			var ds []endpoint.Descriptor
			staged := 0
			for _, b := range blobs {
				d := endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
				ds = append(ds, d)
				r := &countingReader{r: bytes.NewReader(b)}
				err := w.PutBlob(ctx, "ns/a", d, r)
				switch {
				case err == nil:
					staged++
					if w.ToWrite(d) != 0 {
						t.Errorf("a staged blob counts %d bytes still to write", w.ToWrite(d))
					}
				case errors.Is(err, ErrNoSpace):
					if r.n != 0 {
						t.Errorf("%d bytes read of a blob refused", r.n)
					}
					if w.ToWrite(d) != d.Size {
						t.Errorf("a blob refused counts %d bytes to write, want %d", w.ToWrite(d), d.Size)
					}
				default:
					t.Fatal(err)
				}
			}
			if staged != tc.staged {
				t.Errorf("%d blobs staged before the layout, want %d", staged, tc.staged)
			}
			if err := w.Expect(ds); err != nil {
				t.Fatal(err)
			}
			for i, b := range blobs {
				if err := w.PutBlob(ctx, "ns/a", ds[i], bytes.NewReader(b)); err != nil {
					t.Errorf("after the layout: %v", err)
				}
				if !w.inSlot(ds[i].Digest) {
					w.waitMove(false)
					if !w.inSlot(ds[i].Digest) {
						t.Errorf("blob %d is not in its slot", i)
					}
				}
			}
		})
	}
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestRemoveIfEmpty: a closed Writer that holds nothing removes its folder;
// one holding a staged blob, or one still open, keeps it.
func TestRemoveIfEmpty(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		stage, open bool
		removed     bool
	}{
		{name: "empty", removed: true},
		{name: "a blob staged", stage: true},
		{name: "still open", open: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "batch-0001")
			w, err := NewWriter(dir, WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.stage {
				putBlobs(t, ctx, w, testSet(24)[:1])
			}
			if !tc.open {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.RemoveIfEmpty(); err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(dir)
			if removed := errors.Is(statErr, os.ErrNotExist); removed != tc.removed {
				t.Errorf("removed: %v, want %v", removed, tc.removed)
			}
			_ = w.Close()
		})
	}
}

// TestResumePartialAfterLayout: a blob cut off midway before the layout
// keeps its bytes in its partial file; after the layout gave it a slot, the
// next transfer takes only the rest, into the partial file, and the blob
// ends in its slot: the archive is the one written without interruption.
func TestResumePartialAfterLayout(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(25)
	all := append(planBlobs(imgs), planManifests(imgs)...)
	refDir, want := referenceArchive(t, WriterOptions{}, imgs)
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img, big := largest(imgs)
	cut := cutBlob(t, ctx, w, img.repo, big)
	if err := w.Expect(all); err != nil { // laid out with the blob cut off
		t.Fatal(err)
	}
	w.Close() // interrupted

	w2, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Expect(all); err != nil {
		t.Fatal(err)
	}
	resumeBlob(t, ctx, w2, img.repo, big, cut)
	if !w2.inSlot(digest.FromBytes(big)) {
		t.Errorf("the resumed blob is not in its slot")
	}
	for _, img := range imgs {
		push(t, ctx, w2, img)
	}
	if _, err := w2.Finish(ctx, metaFor(imgs)); err != nil {
		t.Fatal(err)
	}
	checkArchive(t, dir, imgs, want)
	sameChunkFiles(t, dir, refDir, want)
}

// referenceArchive writes imgs into a new folder as a planned mirror-to-disk
// without a prefetch does (Expect before anything is pushed).
func referenceArchive(t *testing.T, opts WriterOptions, imgs []testImage) (string, *Manifest) {
	t.Helper()
	dir := t.TempDir()
	w := expectingWriter(t, dir, opts, imgs)
	for _, img := range imgs {
		push(t, context.Background(), w, img)
	}
	m, err := w.Finish(context.Background(), metaFor(imgs))
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// sameChunkFiles asserts that the chunks of want are byte for byte the same
// in dir and refDir.
func sameChunkFiles(t *testing.T, dir, refDir string, want *Manifest) {
	t.Helper()
	for _, c := range want.Chunks {
		if !bytes.Equal(readFile(t, filepath.Join(dir, c.Name)), readFile(t, filepath.Join(refDir, c.Name))) {
			t.Errorf("%s differs from the reference archive's", c.Name)
		}
	}
}

// TestExpectWhileStaging: Expect lays the chunks out while blobs are being
// staged concurrently (a prefetch still running): every blob ends in its
// slot, whether its staging ended before, during or after the layout, and
// no chunk is written again at the end.
func TestExpectWhileStaging(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(26)
	rng := testRNG(26)
	for i := range 24 {
		imgs = append(imgs, makeImage(rng, "ns/many", "v"+strconv.Itoa(i), randBytes(rng, 2<<10+rng.IntN(8<<10))))
	}
	all := append(planBlobs(imgs), planManifests(imgs)...)
	refDir, want := referenceArchive(t, WriterOptions{}, imgs)
	dir := t.TempDir()
	var logs syncbuf.Buffer
	w, err := NewWriter(dir, WriterOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range imgs {
		wg.Go(func() { putBlobs(t, ctx, w, imgs[i:i+1]) })
		if i == len(imgs)/2 {
			if err := w.Expect(all); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	for _, img := range imgs {
		push(t, ctx, w, img)
	}
	if _, err := w.Finish(ctx, metaFor(imgs)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "written again") {
		t.Errorf("chunks written again from the staging area:\n%s", logs.String())
	}
	checkArchive(t, dir, imgs, want)
	sameChunkFiles(t, dir, refDir, want)
}
