package transfer

import (
	"context"
	"reflect"
	"sort"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// plainDestination hides Registry.CheckManifest: every check is a HEAD.
type plainDestination struct{ r *registry.Client }

func (p plainDestination) BlobExists(ctx context.Context, repo string, d endpoint.Descriptor) (bool, error) {
	return p.r.BlobExists(ctx, repo, d)
}

func (p plainDestination) ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error) {
	return p.r.ManifestExists(ctx, repo, reference, d)
}

// A dry run against a registry that says which repositories it does not know
// skips their blob checks and finds what checking each blob finds; a
// repository the tag listing calls unknown but that holds one of the plan's
// images (by digest only) is still checked.
func TestEstimatePlanSkipsUnknownRepositories(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	// 12 images in 4 repositories, sharing a base layer.
	imgs := pushImages(t, src.Host(), 12, 4, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(i + 1), BaseSeed: 7, BaseLayers: 1, Layers: 2}
	})
	jobs := jobsFor(imgs, src.Host(), dst.Host())
	// The destination holds two images of one repository (and so that
	// repository); a third repository holds an unrelated image.
	if _, err := Copy(ctx, testRegistry(), testRegistry(), jobs[:1], Options{Retry: mirrortest.FastRetry}); err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(ctx, testRegistry(), testRegistry(), []Job{{Source: jobs[4].Source, Digest: jobs[4].Digest, Dest: jobs[4].Dest}}, Options{Retry: mirrortest.FastRetry}); err != nil {
		t.Fatal(err)
	}
	// A repository holding an image by digest only: no tag, so its tag listing
	// answers 404 NAME_UNKNOWN, yet the image is there.
	if _, err := Copy(ctx, testRegistry(), testRegistry(), []Job{{Source: jobs[3].Source, Digest: jobs[3].Digest, Dest: jobs[3].Dest}}, Options{Retry: mirrortest.FastRetry}); err != nil {
		t.Fatal(err)
	}
	if known, err := testRegistry().RepositoryKnown(ctx, jobs[3].Dest); err != nil || known {
		t.Fatalf("RepositoryKnown(a repository without tags) = %v, %v; this test expects Distribution's NAME_UNKNOWN", known, err)
	}
	imagetest.MustPush(t, jobs[2].Dest+":other", fakeimage.Spec{Seed: 99, Layers: 1})

	dst.Reset()
	plain, err := EstimatePlan(ctx, testRegistry(), plainDestination{testRegistry()}, jobs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	plainCounts := dst.Counts()
	dst.Reset()
	fast, err := EstimatePlan(ctx, testRegistry(), testRegistry(), jobs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	fastCounts := dst.Counts()

	keys := func(js []Job) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.Key())
		}
		sort.Strings(out)
		return out
	}
	if !reflect.DeepEqual(keys(plain.Missing), keys(fast.Missing)) || plain.MissingBlobs != fast.MissingBlobs ||
		plain.BytesToSend != fast.BytesToSend || plain.Blobs != fast.Blobs || plain.Bytes != fast.Bytes {
		t.Errorf("estimates differ:\nHEAD per blob: %d missing %v, %d blobs missing (%d bytes)\nunknown repos skipped: %d missing %v, %d blobs missing (%d bytes)",
			len(plain.Missing), keys(plain.Missing), plain.MissingBlobs, plain.BytesToSend, len(fast.Missing), keys(fast.Missing), fast.MissingBlobs, fast.BytesToSend)
	}
	for _, est := range []*Estimate{plain, fast} {
		if len(est.Missing) != 9 {
			t.Errorf("%d images missing, want 9 (3 of 12 copied)", len(est.Missing))
		}
		for _, m := range est.Missing {
			if m.Key() == jobs[3].Key() {
				t.Errorf("the image held by digest only in a repository without tags is counted missing")
			}
		}
	}
	if fastCounts.BlobHEAD >= plainCounts.BlobHEAD {
		t.Errorf("blob checks: %d with repositories skipped, %d without: nothing skipped", fastCounts.BlobHEAD, plainCounts.BlobHEAD)
	}
	t.Logf("destination requests: HEAD per blob %+v; unknown repositories skipped %+v", plainCounts, fastCounts)
}

// An Estimator that looked at part of the plan early (while the rest of the
// plan was being made) estimates what EstimatePlan does for the whole plan,
// reading each job's manifests once: the early part is not read again, also
// when the final estimate starts while the early look is still running.
func TestEstimatorLooksEarlyOnce(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 10, 3, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(i + 40), BaseSeed: 3, BaseLayers: 1, Layers: 1}
	})
	jobs := jobsFor(imgs, src.Host(), dst.Host())
	if _, err := Copy(ctx, testRegistry(), testRegistry(), jobs[:3], Options{Retry: mirrortest.FastRetry}); err != nil {
		t.Fatal(err)
	}
	src.Reset()
	want, err := EstimatePlan(ctx, testRegistry(), testRegistry(), jobs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	oneRead := src.Counts().ManifestGET
	for _, concurrent := range []bool{false, true} {
		src.Reset()
		x := NewEstimator(testRegistry(), testRegistry(), 4)
		early := make(chan struct{})
		go func() {
			defer close(early)
			x.Look(ctx, jobs[2:7], nil)
		}()
		if !concurrent {
			<-early
		}
		var last [3]int
		got, err := x.Estimate(ctx, jobs, func(done, failed, total int) { last = [3]int{done, failed, total} })
		<-early
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("concurrent %v: estimate %+v, want %+v", concurrent, got, want)
		}
		if n := src.Counts().ManifestGET; n != oneRead {
			t.Errorf("concurrent %v: %d manifest reads at the source, want %d (each job once)", concurrent, n, oneRead)
		}
		if last != [3]int{len(jobs), 0, len(jobs)} {
			t.Errorf("concurrent %v: last progress %v, want every job done", concurrent, last)
		}
	}
}
