package pipeline_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// stagedBlobs counts the blobs in the staging area of target's first batch.
func stagedBlobs(target string) int64 {
	ents, _ := os.ReadDir(filepath.Join(target, "batch-0001", ".airlock-staging", "blobs", "sha256"))
	return int64(len(ents))
}

// archiveChunks reads the chunk files of batch dir, by name.
func archiveChunks(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "airlock_*.tar"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no chunk in %s (%v)", dir, err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = b
	}
	return out
}

// TestMirrorToDiskPrefetch: mirror-to-disk fetches blobs into the batch's
// staging area while the plan is still being made (the gated image is not
// resolved yet), and the archive it writes is byte for byte the one a run
// without a prefetch writes; a run interrupted while planning, blobs staged
// already, leaves the batch to resume, and the same command run again writes
// that same archive without fetching the staged blobs again.
func TestMirrorToDiskPrefetch(t *testing.T) {
	t.Parallel()
	src := registrytest.Start(t)
	const n = 4
	pushImages(t, src, n)
	run := func(t *testing.T, host string, target string, prefetch bool, ctx context.Context) (*pipeline.Result, error) {
		o := opts(prefetchConfig(t, host, n, ""))
		o.Destination.Location = location.File(target)
		o.Network.ParallelImages = 1 // img3 is resolved after the others have started
		if !prefetch {
			pipeline.SetNoPrefetch(&o)
		}
		return pipeline.Mirror(ctx, o)
	}
	// reference is the archive a run without a prefetch writes from host (the
	// image names, hence the archive, depend on it).
	reference := func(t *testing.T, host string) map[string][]byte {
		target := t.TempDir()
		if _, err := run(t, host, target, false, context.Background()); err != nil {
			t.Fatal(err)
		}
		return archiveChunks(t, filepath.Join(target, "batch-0001"))
	}

	t.Run("uninterrupted", func(t *testing.T) {
		target := t.TempDir()
		var before int64
		g := startGate(t, src.Host(), gatedManifest("apps/img3"),
			func() bool { return stagedBlobs(target) > 0 }, func() { before = stagedBlobs(target) })
		res, err := run(t, g.host, target, true, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if before == 0 {
			t.Error("no blob staged while planning")
		}
		if res.Archive == nil || res.Archive.Blobs != 3*n+n {
			t.Errorf("archive %+v, want %d blobs (layers, configs and manifests)", res.Archive, 3*n+n)
		}
		sameChunks(t, archiveChunks(t, filepath.Join(target, "batch-0001")), reference(t, g.host))
	})

	t.Run("interrupted while planning", func(t *testing.T) {
		target := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var before int64
		g := startGate(t, src.Host(), gatedManifest("apps/img3"),
			func() bool { return stagedBlobs(target) > 0 }, func() { before = stagedBlobs(target); cancel() })
		if _, err := run(t, g.host, target, true, ctx); err == nil {
			t.Fatal("interrupted run: no error")
		}
		if before == 0 {
			t.Fatal("no blob staged before the interruption: the test does not interrupt a prefetch")
		}
		if stagedBlobs(target) == 0 {
			t.Fatal("the interrupted run left no staged blob to resume from")
		}
		src.Reset()
		res, err := run(t, g.host, target, true, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Archive == nil || !res.Archive.Resumed {
			t.Errorf("archive %+v: want the interrupted batch resumed", res.Archive)
		}
		if got, all := src.Counts().BlobGET, int64(3*n); got > all-before {
			t.Errorf("re-run fetched %d blobs, want at most the %d not staged by the interrupted run", got, all-before)
		}
		sameChunks(t, archiveChunks(t, filepath.Join(target, "batch-0001")), reference(t, g.host))
	})
}

// gatedManifest matches the manifest requests of repository repo.
func gatedManifest(repo string) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v2/"+repo+"/manifests/") }
}

// sameChunks asserts that got holds the chunk files of want, byte for byte.
func sameChunks(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	var gn, wn []string
	for k := range got {
		gn = append(gn, k)
	}
	for k := range want {
		wn = append(wn, k)
	}
	slices.Sort(gn)
	slices.Sort(wn)
	if !slices.Equal(gn, wn) {
		t.Fatalf("chunks %v, want %v", gn, wn)
	}
	for k, b := range want {
		if !bytes.Equal(got[k], b) {
			t.Errorf("%s differs from the archive written without a prefetch", k)
		}
	}
}
