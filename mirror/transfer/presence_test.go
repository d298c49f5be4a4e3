package transfer

import (
	"context"
	"fmt"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// requestsBeyondBase counts a registry's requests other than GET /v2/ (the
// client's ping when it first meets a host).
func requestsBeyondBase(c registrytest.Counts) (n int64) {
	for k, v := range c.ByPath {
		if k != "GET base" {
			n += v
		}
	}
	return n
}

// A no-op re-run asks the destination one question per image (its first tag:
// the answer says both that the manifest is there and that the tag names it)
// and reads nothing at the source, with and without Measure beforehand (the
// progress bar). The first run asks mostly by digest once first tags miss.
func TestNoOpRerunOneDestinationRequestPerImage(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 24, 4, func(i int) fakeimage.Spec {
		s := fakeimage.Spec{Seed: uint64(300 + i), BaseSeed: uint64(i % 2), BaseLayers: 2, Layers: 1, LayerSize: 512}
		if i%6 == 1 {
			s.Platforms = []string{"linux/amd64", "linux/arm64"}
		}
		return s
	})
	jobs := jobsFor(imgs, src.Host(), dst.Host())
	opts := Options{Retry: mirrortest.FastRetry, ParallelImages: 4}
	if _, err := Copy(ctx, testRegistry(), testRegistry(), jobs, opts); err != nil {
		t.Fatal(err)
	}
	first := dst.Counts()
	// Tags are asked first until they miss missSlack more times than they hit;
	// the images already started then ask once more.
	manifests := 0 // children of indexes included: each is asked for by digest
	for _, im := range imgs {
		manifests += len(im.Manifests)
	}
	if limit := int64(manifests + missSlack + 1 + opts.ParallelImages); first.ManifestHEAD > limit {
		t.Errorf("first run: %d manifest HEADs for %d manifests, want at most %d", first.ManifestHEAD, manifests, limit)
	}
	checkDest(t, jobs)

	for _, measure := range []bool{false, true} {
		t.Run(fmt.Sprintf("measure=%v", measure), func(t *testing.T) {
			src.Reset()
			dst.Reset()
			reg := testRegistry()
			o := opts
			if measure {
				s, err := Measure(ctx, reg, reg, jobs, 16, nil)
				if err != nil {
					t.Fatal(err)
				}
				o.Held = s.Held
			}
			rep, err := Copy(ctx, reg, reg, jobs, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range rep.Images {
				if im.Status != StatusSkipped {
					t.Fatalf("%s: %s", im.Job.Key(), im.Status)
				}
			}
			if n := requestsBeyondBase(dst.Counts()); n != int64(len(jobs)) {
				t.Errorf("no-op re-run: %d destination requests for %d images (%v), want one each", n, len(jobs), dst.Counts().ByPath)
			}
			if n := requestsBeyondBase(src.Counts()); n != 0 {
				t.Errorf("no-op re-run: %d source requests (%v), want none", n, src.Counts().ByPath)
			}
		})
	}
}

// An image the destination holds whose tag went missing (or moved) gets the
// tag back with one PUT: the destination said it holds the manifest by
// digest, so the push by digest that verifies a new manifest is not repeated,
// and the manifest is read there, not at the source.
func TestMissingTagOfHeldManifestIsOnePut(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 3, 3, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(400 + i), Layers: 1, LayerSize: 256}
	})
	jobs := jobsFor(imgs, src.Host(), dst.Host())
	if _, err := Copy(ctx, testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		newTags func(j Job) []string
		puts    int64 // manifest PUTs per job
	}{
		{"new tag", func(j Job) []string { return []string{"other"} }, 1},
		{"second tag", func(j Job) []string { return append(j.Tags, "also") }, 1},
		{"same tags", func(j Job) []string { return j.Tags }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var again []Job
			for _, j := range jobs {
				j.Tags = tc.newTags(j)
				again = append(again, j)
			}
			dst.Reset()
			src.Reset()
			rep, err := Copy(ctx, testRegistry(), testRegistry(), again, Options{Retry: mirrortest.FastRetry})
			if err != nil {
				t.Fatal(err)
			}
			c := dst.Counts()
			if want := tc.puts * int64(len(jobs)); c.ManifestPUT != want || rep.ManifestsSent != want {
				t.Errorf("%d manifest PUTs (report %d), want %d: %v", c.ManifestPUT, rep.ManifestsSent, want, c.ByPath)
			}
			if c.UploadPOST+c.MountPOST+c.BlobHEAD != 0 {
				t.Errorf("blobs of held manifests asked for: %v", c.ByPath)
			}
			// The manifest to tag is read where it is held, the destination
			// (verified by digest), once; the source is not asked.
			if n := requestsBeyondBase(src.Counts()); n != 0 {
				t.Errorf("%d source requests (%v), want none", n, src.Counts().ByPath)
			}
			if c.ManifestGET != tc.puts*int64(len(jobs)) {
				t.Errorf("%d destination manifest GETs (%v), want %d", c.ManifestGET, c.ByPath, tc.puts*int64(len(jobs)))
			}
			checkDest(t, again)
		})
	}
}
