package transfer

import (
	"context"
	"net/http"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// A prefetch sends blobs only; Copy with it pushes the manifests and tags,
// asks the destination nothing about what the prefetch sent, counts every
// blob once (its bytes in the image that needs it), and its progress reaches
// the totals. Blob reads the prefetch lost (no retries here) are not final:
// Copy reads them again itself.
func TestPrefetchThenCopy(t *testing.T) {
	src, dst := registrytest.Start(t), registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 6, 3, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(500 + i), BaseSeed: 7, BaseLayers: 1, Layers: 2, LayerSize: 32 << 10}
	})
	proxy := registrytest.NewFaultProxy(t, src.Host(), registrytest.FaultPlan{
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodGet && registrytest.PathKind(r.URL.Path) == "blob"
		},
		Sequence: []registrytest.Fault{registrytest.Unavailable, registrytest.Unavailable},
	})
	jobs := jobsFor(imgs, proxy.Host(), dst.Host())
	noRetry := &retry.Policy{}
	srcReg := registry.New(registry.Options{Retry: noRetry, KeepManifests: registry.SourceManifests})
	opts := Options{Retry: noRetry}
	p := NewPrefetch(context.Background(), srcReg, testRegistry(), opts)
	p.Expect(jobs)
	for _, j := range jobs {
		p.Add(j)
	}
	p.wg.Wait() // every image's blobs tried
	unique := int64(len(uniqueBlobs(imgs)))
	before := dst.Counts()
	if before.ManifestPUT != 0 || before.Committed() == 0 || before.Committed() > unique-1 {
		t.Fatalf("after the prefetch: %d manifests pushed, %d blobs committed; want none, and all but the blobs whose reads failed", before.ManifestPUT, before.Committed())
	}
	if a := proxy.Applied()[registrytest.Unavailable]; a != 2 {
		t.Fatalf("%d blob reads failed, want 2", a)
	}
	dst.Reset()
	var last ProgressEvent
	opts.Progress = func(ev ProgressEvent) { last = ev }
	rep, err := p.Copy(context.Background(), jobs, opts)
	p.Stop()
	if err != nil {
		t.Fatalf("copy: %v %+v", err, rep.Failed())
	}
	checkDest(t, jobs)
	c := dst.Counts()
	if rep.BlobsSent+rep.BlobsMounted != int64(blobsPerRepo(jobs, imgs)) || rep.BlobsSent != unique {
		t.Errorf("report: %d sent, %d mounted; want %d unique blobs sent once and %d blob placements", rep.BlobsSent, rep.BlobsMounted, unique, blobsPerRepo(jobs, imgs))
	}
	if got := before.Committed() + c.Committed(); got != unique {
		t.Errorf("destination committed %d blobs in all, want %d", got, unique)
	}
	if c.BlobHEAD != 0 {
		t.Errorf("copy asked the destination about %d blobs (%v), want none", c.BlobHEAD, c.ByPath)
	}
	var perImage int64
	for _, im := range rep.Images {
		perImage += im.BytesSent
		if im.Status != StatusCopied {
			t.Errorf("%s: %s", im.Job.Key(), im.Status)
		}
	}
	if perImage != rep.BytesSent {
		t.Errorf("bytes per image add up to %d, report says %d", perImage, rep.BytesSent)
	}
	if last.BytesDone != last.BytesTotal || last.ImagesDone != len(jobs) {
		t.Errorf("last progress %+v, want everything done", last)
	}
}
