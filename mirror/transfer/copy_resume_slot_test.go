package transfer_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// expectAll lays the jobs' blobs and manifests out in w's chunks before the
// copy, as mirror-to-disk does (the manifests read by Measure).
func expectAll(t *testing.T, w *archive.Writer, src transfer.EstimateSource, jobs []transfer.Job) endpoint.Descriptor {
	t.Helper()
	s, err := transfer.Measure(context.Background(), src, nil, jobs, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var all []endpoint.Descriptor
	var big endpoint.Descriptor
	for i := range jobs {
		for _, b := range s.PerJob[i] {
			if b.Size > big.Size {
				big = b
			}
		}
		all = append(append(all, s.PerJob[i]...), s.Manifests[i]...)
	}
	if err := w.Expect(all); err != nil {
		t.Fatal(err)
	}
	return big
}

// TestCopyToArchiveResumesAnInterruptedBlobInItsChunk: a blob laid out
// before the copy and cut off midway keeps its bytes in its place in its
// chunk; the re-run hashes them back and fetches the rest with a Range
// request (or, from a registry that ignores Range, the whole blob again),
// and the archive's blob is the right one.
func TestCopyToArchiveResumesAnInterruptedBlobInItsChunk(t *testing.T) {
	const size = 6 << 20
	tg := registrytest.StartKind(t, registrytest.DistributionV3)
	p := imagetest.MustPush(t, tg.Host+"/r/big:1", fakeimage.Spec{Seed: 12, Layers: 1, LayerSize: size})
	counter := registrytest.NewBlobCounter(t, tg.Host)
	for _, tc := range []struct {
		name string
		mode int32
	}{
		{"50%", registrytest.RangeHonoured},
		{"50% Range ignored", registrytest.RangeIgnored},
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
			big := expectAll(t, w, src, jobs)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			at := int64(size / 2)
			rep, err := transfer.Copy(ctx, src, &cutDest{Writer: w, bigSize: size, at: at, cancel: cancel}, jobs, opts)
			if err == nil && len(rep.Failed()) == 0 {
				t.Fatal("the interrupted copy succeeded")
			}
			w.Close()
			if n := partialBytes(t, dir); n != 0 {
				t.Errorf("%d bytes in the staging area's partial folder: the blob's bytes go into its chunk", n)
			}

			counter.Reset()
			counter.SetRangeMode(tc.mode)
			w2, err := archive.NewWriter(dir, archive.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Close()
			expectAll(t, w2, src, jobs)
			if held := size - w2.ToWrite(big); held != at {
				t.Fatalf("the interrupt left %d bytes in the chunk, want %d", held, at)
			}
			rep, err = transfer.Copy(context.Background(), src, w2, jobs, opts)
			if err != nil || len(rep.Failed()) != 0 {
				t.Fatalf("re-run: %v %+v", err, rep)
			}
			again := counter.Bytes()
			t.Logf("the re-run fetched %d bytes (%.1f%% of the blob), resumed %d; blob GETs %q", again, 100*float64(again)/size, rep.BytesResumed, counter.Gets())
			if tc.mode == registrytest.RangeHonoured {
				if again > size-at+64<<10 || rep.BytesResumed != at || !hasRange(counter.Gets(), at) {
					t.Errorf("the re-run fetched %d bytes (resumed %d, GETs %q); %d remained", again, rep.BytesResumed, counter.Gets(), size-at)
				}
			} else if again < size {
				t.Errorf("a registry ignoring Range served %d bytes, want the whole blob", again)
			}
			checkStaged(t, dir, w2, jobs)
		})
	}
}
