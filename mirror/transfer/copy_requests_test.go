package transfer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// requestsWorkload is shaped like the bench's reference workload (3.7 blobs per
// manifest), small: 32 tags in 4 repositories, 2 shared base layers, 3 layers
// of each image's own, every sixth tag a two-arch index.
func requestsWorkload(t *testing.T, host string) []pushed {
	return pushImages(t, host, 32, 4, func(i int) fakeimage.Spec {
		s := fakeimage.Spec{Seed: uint64(700 + i), BaseSeed: uint64(i % 2), BaseLayers: 2, Layers: 3, LayerSize: 4 << 10}
		if i%6 == 5 {
			s.Platforms = []string{"linux/amd64", "linux/arm64"}
		}
		return s
	})
}

// copyCounted copies jobs with a fresh client, after Measure as the pipeline
// does when measure is set (the copy then takes its answers: Options.Held).
func copyCounted(ctx context.Context, t *testing.T, jobs []Job, measure bool, opts Options) (*Report, error) {
	t.Helper()
	reg := testRegistry()
	if measure {
		s, err := Measure(ctx, reg, reg, jobs, 16, nil)
		if err != nil {
			return nil, err
		}
		opts.Held = s.Held
	}
	return Copy(ctx, reg, reg, jobs, opts)
}

// TestFirstRunRequestsPerBlob counts the destination's requests on a first run
// into a new destination (the target of docs/benchmarks.md: at most 2.5 per unique blob, each blob sent
// once): per new blob an upload POST and its PUT, a mount for each other
// repository, one PUT per manifest, one tag listing per repository once first
// tags miss; blob HEADs only until the first commit's mount probe, manifest
// HEADs only until first tags are found missing.
func TestFirstRunRequestsPerBlob(t *testing.T) {
	for _, measure := range []bool{false, true} {
		t.Run(fmt.Sprintf("measure=%v", measure), func(t *testing.T) {
			ctx := context.Background()
			src, dst := registrytest.Start(t), registrytest.Start(t)
			imgs := requestsWorkload(t, src.Host())
			jobs := jobsFor(imgs, src.Host(), dst.Host())
			opts := Options{Retry: mirrortest.FastRetry, ParallelImages: 4, ParallelLayers: 3}
			if _, err := copyCounted(ctx, t, jobs, measure, opts); err != nil {
				t.Fatal(err)
			}
			c := dst.Counts()
			checkDest(t, jobs)
			unique := int64(len(uniqueBlobs(imgs)))
			manifests, pairs := int64(0), int64(blobsPerRepo(jobs, imgs))
			for _, im := range imgs {
				manifests += int64(len(im.Manifests))
			}
			n := requestsBeyondBase(c)
			t.Logf("%d requests for %d blobs (%.2f): %v", n, unique, float64(n)/float64(unique), c.ByPath)
			// Measure asks 16 images at once before any answer (ParallelImages
			// without it): on this small workload that is worth the difference.
			slack := 0
			if measure {
				slack = 16 - opts.ParallelImages
			}
			if r := float64(n-int64(slack)) / float64(unique); r > 2.5 {
				t.Errorf("%.2f destination requests per blob (less %d), want ≤ 2.5", r, slack)
			}
			if c.Committed() != unique || c.Mounted < pairs-unique {
				t.Errorf("committed %d (want %d, each once), mounted %d (want ≥ %d)", c.Committed(), unique, c.Mounted, pairs-unique)
			}
			if c.ManifestPUT != manifests {
				t.Errorf("%d manifest PUTs for %d manifests, want one each", c.ManifestPUT, manifests)
			}
			inFlight := int64(opts.ParallelImages * opts.ParallelLayers)
			if c.BlobHEAD > inFlight {
				t.Errorf("%d blob HEADs, want at most the %d uploads that start before the first commit", c.BlobHEAD, inFlight)
			}
			parallel := int64(opts.ParallelImages)
			if measure {
				parallel = 16
			}
			if limit := int64(missSlack+1) + parallel; c.ManifestHEAD > limit {
				t.Errorf("%d manifest HEADs, want at most %d (until first tags are found missing)", c.ManifestHEAD, limit)
			}
			if got := c.ByPath["GET tags"]; got > 4 {
				t.Errorf("%d tag listings for 4 repositories", got)
			}
		})
	}
}

// TestInterruptedRunReruns: a first run stopped midway is run again to
// completion. Every blob is sent once over both runs (what the first run
// committed is found held: by its mount into its own repository where the
// registry honours mounts, by a HEAD where it does not), the re-run's requests
// per blob stay within the first run's bound, and a third run is a no-op of one
// request per image.
func TestInterruptedRunReruns(t *testing.T) {
	cases := []struct {
		name    string
		measure bool
		mounts  bool
	}{
		{"mounts", false, true},
		{"mounts, measure", true, true},
		{"no mounts", false, false},
		{"no mounts, measure", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ropts []registrytest.Option
			if !tc.mounts {
				ropts = append(ropts, registrytest.WithoutMounts())
			}
			src, dst := registrytest.Start(t), registrytest.Start(t, ropts...)
			imgs := requestsWorkload(t, src.Host())
			jobs := jobsFor(imgs, src.Host(), dst.Host())
			// Without mounts, each repository gets its own copy of a blob.
			want := int64(len(uniqueBlobs(imgs)))
			if !tc.mounts {
				want = int64(blobsPerRepo(jobs, imgs))
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var blobs atomic.Int64
			_, err := copyCounted(ctx, t, jobs, tc.measure, Options{ParallelImages: 2, ParallelLayers: 2, Retry: mirrortest.FastRetry,
				Progress: func(ev ProgressEvent) {
					if ev.Image == nil && blobs.Add(1) == 20 {
						cancel()
					}
				}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("first run: %v, want context.Canceled", err)
			}
			first := settledCommits(dst)
			if first == 0 || first >= want {
				t.Fatalf("first run committed %d of %d blobs; want a partial copy", first, want)
			}

			dst.Reset()
			rep, err := copyCounted(context.Background(), t, jobs, tc.measure, Options{Retry: mirrortest.FastRetry, ParallelImages: 4, ParallelLayers: 3})
			if err != nil {
				t.Fatalf("re-run: %v", err)
			}
			c := dst.Counts()
			checkDest(t, jobs)
			if c.Committed() != want-first || rep.BlobsSent != want-first {
				t.Errorf("re-run committed %d (report %d), want %d: every blob once over both runs", c.Committed(), rep.BlobsSent, want-first)
			}
			n := requestsBeyondBase(c)
			t.Logf("re-run: %d requests for %d blobs (%.2f): %v", n, want, float64(n)/float64(want), c.ByPath)
			// Without mounts every blob also costs a HEAD. The images asked
			// at once before any answer (16 by Measure) may each ask twice.
			limit, slack := 2.5, 4
			if !tc.mounts {
				limit = 3.5
			}
			if tc.measure {
				slack = 16
			}
			if r := float64(n-int64(slack)) / float64(want); r > limit {
				t.Errorf("re-run: %.2f destination requests per blob (less %d), want ≤ %.1f", r, slack, limit)
			}

			dst.Reset()
			if _, err := copyCounted(context.Background(), t, jobs, tc.measure, Options{Retry: mirrortest.FastRetry}); err != nil {
				t.Fatal(err)
			}
			if n := requestsBeyondBase(dst.Counts()); n != int64(len(jobs)) {
				t.Errorf("no-op run: %d destination requests for %d images (%v)", n, len(jobs), dst.Counts().ByPath)
			}
		})
	}
}
