package transfer_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// cutDest is a Destination whose uploads stop the run (cancel) once the
// blob of size bigSize has had at bytes written: an interrupt (Ctrl-C) in the
// middle of a blob, at an exact byte.
type cutDest struct {
	*archive.Writer
	bigSize, at int64
	cancel      context.CancelFunc
}

func (c *cutDest) StartBlob(ctx context.Context, repo string, d endpoint.Descriptor) (endpoint.BlobUpload, error) {
	up, err := c.Writer.StartBlob(ctx, repo, d)
	if up == nil || err != nil || d.Size != c.bigSize {
		return up, err
	}
	return &cutUpload{ResumableUpload: up.(endpoint.ResumableUpload), c: c}, nil
}

type cutUpload struct {
	endpoint.ResumableUpload
	c *cutDest
}

func (u *cutUpload) WriteFrom(ctx context.Context, r io.Reader, off int64) error {
	return u.ResumableUpload.WriteFrom(ctx, &cutReader{r: r, left: u.c.at - off, cancel: u.c.cancel}, off)
}

type cutReader struct {
	r      io.Reader
	left   int64
	cancel context.CancelFunc
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.cancel()
		return 0, context.Canceled
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// TestCopyToArchiveResumesAnInterruptedBlob interrupts mirror-to-disk staging
// of a large blob at 25, 50 and 95% of it, against the embedded registry and
// Debian's Distribution 2.8: the re-run fetches the rest of the blob with a
// Range request (what the registry served is counted by a proxy in front of
// it), not the blob again, and the archive's blob is the right one. A
// registry (or proxy) that ignores Range, or that answers a range of the
// wrong length, costs bytes or an attempt but never a wrong blob.
func TestCopyToArchiveResumesAnInterruptedBlob(t *testing.T) {
	const size = 6 << 20
	for _, kind := range []string{registrytest.DistributionV3, registrytest.Distribution28} {
		t.Run(kind, func(t *testing.T) {
			tg := registrytest.StartKind(t, kind)
			p := imagetest.MustPush(t, tg.Host+"/r/big:1", fakeimage.Spec{Seed: 11, Layers: 1, LayerSize: size})
			counter := registrytest.NewBlobCounter(t, tg.Host)
			for _, tc := range []struct {
				name string
				pct  int64
				mode int32
			}{
				{"25%", 25, registrytest.RangeHonoured},
				{"50%", 50, registrytest.RangeHonoured},
				{"95%", 95, registrytest.RangeHonoured},
				{"50% Range ignored", 50, registrytest.RangeIgnored},
				{"50% Range short", 50, registrytest.RangeShort},
				{"50% held bytes corrupt", 50, rangeCorrupt},
			} {
				t.Run(tc.name, func(t *testing.T) {
					counter.SetRangeMode(registrytest.RangeHonoured)
					counter.Reset()
					dir := filepath.Join(t.TempDir(), archive.BatchName(1))
					jobs := []transfer.Job{{Source: counter.Host() + "/r/big", Digest: p.Digest, Dest: "mirror/big", Tags: []string{"1"}}}
					opts := transfer.Options{Retry: mirrortest.FastRetry}
					src := registry.New(registry.Options{Retry: mirrortest.FastRetry})

					w, err := archive.NewWriter(dir, archive.WriterOptions{})
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					at := size * tc.pct / 100
					rep, err := transfer.Copy(ctx, src, &cutDest{Writer: w, bigSize: size, at: at, cancel: cancel}, jobs, opts)
					if err == nil && len(rep.Failed()) == 0 {
						t.Fatal("the interrupted copy succeeded")
					}
					w.Close()
					first := counter.Bytes()
					held := partialBytes(t, dir)
					if held != at {
						t.Fatalf("the interrupt left %d bytes staged, want %d", held, at)
					}

					if tc.mode == rangeCorrupt { // a byte of the held part changed on disk
						corruptPartial(t, dir)
					}
					counter.Reset()
					counter.SetRangeMode(tc.mode % rangeCorrupt)
					w2, err := archive.NewWriter(dir, archive.WriterOptions{})
					if err != nil {
						t.Fatal(err)
					}
					defer w2.Close()
					rep, err = transfer.Copy(context.Background(), src, w2, jobs, opts)
					if err != nil || len(rep.Failed()) != 0 {
						t.Fatalf("re-run: %v %+v", err, rep)
					}
					again := counter.Bytes()
					t.Logf("%s: interrupted after %d of %d bytes fetched (%d staged); the re-run fetched %d bytes (%.1f%% of the blob), resumed %d; blob GETs %q",
						kind, first, size, held, again, 100*float64(again)/size, rep.BytesResumed, counter.Gets())
					slack := int64(64 << 10) // the config blob and what a proxy buffers
					switch tc.mode {
					case registrytest.RangeHonoured:
						if again > size-held+slack {
							t.Errorf("the re-run fetched %d bytes; %d remained", again, size-held)
						}
						if rep.BytesResumed != held {
							t.Errorf("BytesResumed %d, want %d", rep.BytesResumed, held)
						}
						if !hasRange(counter.Gets(), at) {
							t.Errorf("no Range request from byte %d: %q", at, counter.Gets())
						}
					case rangeCorrupt: // the rest, found wrong whole, then the whole blob
						if again < size+size-held {
							t.Errorf("the re-run fetched %d bytes: want the rest, then the whole blob again", again)
						}
					default: // read from the start, the held bytes dropped
						if again < size {
							t.Errorf("a registry misreading Range served %d bytes, want the whole blob", again)
						}
					}
					if got := partialBytes(t, dir); got != 0 {
						t.Errorf("%d bytes left in the partial folder after the blob was staged", got)
					}
					checkStaged(t, dir, w2, jobs)
				})
			}
		})
	}
}

// rangeCorrupt is a test case's mode: the held bytes are altered on disk
// before the re-run (which then sees Range requests honoured).
const rangeCorrupt int32 = 16

// corruptPartial changes a byte of the staging area's only partial file.
func corruptPartial(t *testing.T, dir string) {
	t.Helper()
	part := filepath.Join(dir, ".airlock-staging", "partial")
	ents, err := os.ReadDir(part)
	if err != nil {
		t.Fatal(err)
	}
	// The large blob's partial file: a smaller blob in flight when the copy
	// was cut may have left an empty one beside it.
	var p string
	var b []byte
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(part, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > len(b) {
			p, b = filepath.Join(part, e.Name()), data
		}
	}
	if len(b) == 0 {
		t.Fatalf("no partial file holds bytes: %v", ents)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// partialBytes is the size of the staging area's partial files.
func partialBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, ".airlock-staging", "partial"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

func hasRange(gets []string, at int64) bool {
	for _, g := range gets {
		if strings.HasPrefix(g, "206 bytes="+strconv.FormatInt(at, 10)+"-") {
			return true
		}
	}
	return false
}

// checkStaged finishes the archive w staged in dir and reads the job's image
// back, every blob verified against its digest.
func checkStaged(t *testing.T, dir string, w *archive.Writer, jobs []transfer.Job) {
	t.Helper()
	ctx := context.Background()
	j := jobs[0]
	meta := archive.Meta{Batch: 1, Images: []archive.ImageRecord{{Source: j.Source + ":1", Digest: j.Digest, Destination: j.Dest, Tags: j.Tags}}}
	if _, err := w.Finish(ctx, meta); err != nil {
		t.Fatal(err)
	}
	r, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := r.Manifest(ctx, j.Dest, j.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	refs, err := oci.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range refs.Blobs {
		rc, err := r.Blob(ctx, j.Dest, b)
		if err != nil {
			t.Fatal(err)
		}
		v := oci.NewVerifier(rc, b)
		_, err = io.Copy(io.Discard, v)
		rc.Close()
		if err != nil || !v.Verified() {
			t.Fatalf("blob %s read back: %v", b.Digest, err)
		}
	}
}
