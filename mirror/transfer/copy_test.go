package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

func testRegistry() *registry.Client {
	return registry.New(registry.Options{Retry: mirrortest.FastRetry})
}

// pushed is an image pushed to the source for a test.
type pushed struct {
	imagetest.Pushed
	repo, tag string
}

func pushImages(t *testing.T, host string, n, repos int, spec func(i int) fakeimage.Spec) []pushed {
	t.Helper()
	var out []pushed
	for i := 0; i < n; i++ {
		repo := fmt.Sprintf("%s/ns/app%d", host, i%repos)
		tag := fmt.Sprintf("v%d", i)
		p := imagetest.MustPush(t, repo+":"+tag, spec(i))
		out = append(out, pushed{Pushed: p, repo: repo, tag: tag})
	}
	return out
}

func jobsFor(imgs []pushed, srcHost, dstHost string) []Job {
	var jobs []Job
	for _, im := range imgs {
		jobs = append(jobs, Job{
			Source: strings.Replace(im.repo, im.repo[:strings.IndexByte(im.repo, '/')], srcHost, 1),
			Digest: im.Digest,
			Dest:   strings.Replace(im.repo, im.repo[:strings.IndexByte(im.repo, '/')], dstHost+"/mirror", 1),
			Tags:   []string{im.tag},
		})
	}
	return jobs
}

func uniqueBlobs(imgs []pushed) map[digest.Digest]bool {
	u := map[digest.Digest]bool{}
	for _, im := range imgs {
		for _, b := range im.Blobs {
			u[b] = true
		}
	}
	return u
}

// blobsPerRepo counts (repo, blob) pairs at the destination.
func blobsPerRepo(jobs []Job, imgs []pushed) int {
	pairs := map[string]bool{}
	for i, j := range jobs {
		for _, b := range imgs[i].Blobs {
			pairs[j.Dest+"@"+b.String()] = true
		}
	}
	return len(pairs)
}

// checkDest reads every job's image back from the destination by tag: the tag
// resolves to the job's digest, and every manifest and blob is read and verified.
func checkDest(t *testing.T, jobs []Job) {
	t.Helper()
	ctx := context.Background()
	reg := testRegistry()
	var walk func(repo string, d digest.Digest)
	walk = func(repo string, d digest.Digest) {
		m, err := reg.Manifest(ctx, repo, d.String())
		if err != nil {
			t.Fatalf("%s@%s: %v", repo, d, err)
		}
		refs, err := oci.Parse(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range refs.Manifests {
			walk(repo, c.Digest)
		}
		for _, b := range refs.Blobs {
			rc, err := reg.Blob(ctx, repo, b)
			if err != nil {
				t.Fatalf("%s@%s: %v", repo, b.Digest, err)
			}
			_, err = io.Copy(io.Discard, oci.NewVerifier(rc, b))
			rc.Close()
			if err != nil {
				t.Fatalf("%s@%s: %v", repo, b.Digest, err)
			}
		}
	}
	for _, j := range jobs {
		for _, tag := range j.Tags {
			desc, err := reg.Resolve(ctx, j.Dest+":"+tag)
			if err != nil {
				t.Fatal(err)
			}
			if desc.Digest != j.Digest {
				t.Fatalf("%s:%s: digest %s, want %s", j.Dest, tag, desc.Digest, j.Digest)
			}
		}
		walk(j.Dest, j.Digest)
	}
}

func TestCopyImageKinds(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	cases := []struct {
		name string
		spec fakeimage.Spec
	}{
		{"docker-single", fakeimage.Spec{Seed: 1, BaseSeed: 1, BaseLayers: 1, Layers: 2}},
		{"oci-single", fakeimage.Spec{Seed: 2, BaseSeed: 1, BaseLayers: 1, Layers: 2, OCI: true}},
		{"docker-multiarch", fakeimage.Spec{Seed: 3, BaseSeed: 2, BaseLayers: 2, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}}},
		{"oci-multiarch", fakeimage.Spec{Seed: 4, BaseSeed: 2, BaseLayers: 2, Layers: 1, OCI: true, Platforms: []string{"linux/amd64", "linux/arm64"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := imagetest.MustPush(t, src.Host()+"/kinds/"+tc.name+":1.0", tc.spec)
			jobs := []Job{{Source: src.Host() + "/kinds/" + tc.name, Digest: p.Digest, Dest: dst.Host() + "/m/kinds/" + tc.name, Tags: []string{"1.0", "latest"}}}
			dst.Reset()
			rep, err := Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
			if err != nil {
				t.Fatalf("copy: %v (%+v)", err, rep)
			}
			if rep.Images[0].Status != StatusCopied {
				t.Fatalf("status %q", rep.Images[0].Status)
			}
			checkDest(t, jobs)
			c := dst.Counts()
			// Children of an index by digest, then the top manifest under
			// each of its two tags: one PUT each.
			if want := int64(len(p.Manifests) + 1); c.ManifestPUT != want || rep.ManifestsSent != want {
				t.Fatalf("manifest PUTs %d (report %d), want %d", c.ManifestPUT, rep.ManifestsSent, want)
			}
			// Mounted: the probe of mount support before the first blob
			// (honoursMountsOf in mirror/registry), a mount of the empty
			// JSON blob into its own repository.
			if c.Committed() != int64(len(p.Blobs)) || c.Mounted != 1 {
				t.Fatalf("blobs committed %d, mounted %d; want %d and 1 (the probe)", c.Committed(), c.Mounted, len(p.Blobs))
			}
		})
	}
}

func TestCopySharedLayersOnceThenNothing(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 12, 4, func(i int) fakeimage.Spec {
		s := fakeimage.Spec{Seed: uint64(100 + i), BaseSeed: uint64(i % 2), BaseLayers: 3, Layers: 2, LayerSize: 2048, OCI: i%3 == 0}
		if i%4 == 1 {
			s.Platforms = []string{"linux/amd64", "linux/arm64"}
		}
		return s
	})
	jobs := jobsFor(imgs, src.Host(), dst.Host())
	unique := uniqueBlobs(imgs)
	pairs := blobsPerRepo(jobs, imgs)

	var events atomic.Int64
	var last ProgressEvent
	rep, err := Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{
		ParallelImages: 4, ParallelLayers: 3, Retry: mirrortest.FastRetry,
		Progress: func(ev ProgressEvent) { events.Add(1); last = ev },
	})
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	checkDest(t, jobs)
	c := dst.Counts()
	if c.Committed() != int64(len(unique)) || rep.BlobsSent != int64(len(unique)) {
		t.Fatalf("blob uploads: registry %d, report %d; want %d (one per unique blob)", c.Committed(), rep.BlobsSent, len(unique))
	}
	if c.Sessions != int64(len(unique))+1 { // and the mount probe's
		t.Fatalf("upload sessions %d, want %d and the mount probe's", c.Sessions, len(unique))
	}
	t.Logf("destination requests: %+v", c)
	// The registry also counts the probe of mount support (probeMounts in
	// mirror/registry), unless a mount across repositories came first.
	if want := int64(pairs - len(unique)); c.Mounted-rep.BlobsMounted > 1 || rep.BlobsMounted != want {
		t.Fatalf("mounts: registry %d, report %d; want %d (the registry: at most one more)", c.Mounted, rep.BlobsMounted, want)
	}
	if last.ImagesDone != len(jobs) || last.BytesDone != last.BytesTotal || events.Load() == 0 {
		t.Fatalf("last progress event %+v", last)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}

	// Second run: nothing is sent.
	dst.Reset()
	src.Reset()
	rep, err = Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
	if err != nil {
		t.Fatalf("second copy: %v", err)
	}
	c = dst.Counts()
	if c.ManifestPUT != 0 || c.UploadPOST != 0 || c.MountPOST != 0 || c.BytesUploaded != 0 || c.BlobHEAD != 0 {
		t.Fatalf("second run touched the destination: %+v", c)
	}
	if sc := src.Counts(); sc.BlobGET != 0 || sc.ManifestGET != 0 {
		t.Fatalf("second run read the source: %+v", sc)
	}
	for _, im := range rep.Images {
		if im.Status != StatusSkipped {
			t.Fatalf("second run: %s status %q", im.Job.Source, im.Status)
		}
	}
}

func TestCopySameRegistryMountsFromSource(t *testing.T) {
	reg := registrytest.Start(t)
	imgs := pushImages(t, reg.Host(), 3, 3, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(i), BaseSeed: 9, BaseLayers: 2, Layers: 1}
	})
	jobs := jobsFor(imgs, reg.Host(), reg.Host())
	reg.Reset()
	rep, err := Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	c := reg.Counts()
	if c.BlobGET != 0 || c.BytesUploaded != 0 || c.BlobsCommitted != 0 {
		t.Fatalf("same-registry copy moved bytes: %+v", c)
	}
	if c.Mounted != int64(blobsPerRepo(jobs, imgs)) || rep.BlobsSent != 0 {
		t.Fatalf("mounted %d, want %d (report %+v)", c.Mounted, blobsPerRepo(jobs, imgs), rep)
	}
	checkDest(t, jobs)
}

func TestCopyThroughFaults(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 6, 2, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(200 + i), BaseSeed: 5, BaseLayers: 2, Layers: 2, LayerSize: 64 << 10}
	})
	everything := func(r *http.Request) bool {
		k := registrytest.PathKind(r.URL.Path)
		return k == "blob" || k == "manifest"
	}
	proxy := registrytest.NewFaultProxy(t, src.Host(), registrytest.FaultPlan{
		Match: everything,
		Sequence: []registrytest.Fault{
			registrytest.TooManyRequests, registrytest.Unavailable, registrytest.Pass,
			registrytest.CutMidBody, registrytest.TruncateBody, registrytest.Unavailable,
		},
		Rate:  0.25,
		Kinds: []registrytest.Fault{registrytest.TooManyRequests, registrytest.Unavailable, registrytest.CutMidBody, registrytest.TruncateBody},
		Seed:  42,
	})
	jobs := jobsFor(imgs, proxy.Host(), dst.Host())
	rep, err := Copy(context.Background(), registry.New(registry.Options{Retry: fastRetry10}), testRegistry(), jobs,
		Options{Retry: fastRetry10})
	if err != nil {
		t.Fatalf("copy through faults: %v\n%+v", err, rep.Failed())
	}
	applied := proxy.Applied()
	for _, f := range []registrytest.Fault{registrytest.TooManyRequests, registrytest.Unavailable, registrytest.CutMidBody, registrytest.TruncateBody} {
		if applied[f] == 0 {
			t.Fatalf("fault %s never injected: %v", f, applied)
		}
	}
	checkDest(t, jobs)
	if c := dst.Counts(); c.Committed() != int64(len(uniqueBlobs(imgs))) {
		t.Fatalf("committed %d blobs, want %d", c.Committed(), len(uniqueBlobs(imgs)))
	}
}

func TestCopyCorruptBlobFailsOnlyItsImage(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 4, 4, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(300 + i), BaseSeed: 7, BaseLayers: 1, Layers: 1, LayerSize: 16 << 10}
	})
	// A blob only image 2 has gets one byte flipped on every read.
	var bad digest.Digest
	others := uniqueBlobsExcept(imgs, 2)
	for _, b := range imgs[2].Blobs {
		if !others[b] {
			bad = b
			break
		}
	}
	proxy := registrytest.NewFaultProxy(t, src.Host(), registrytest.FaultPlan{
		Match: func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/blobs/"+bad.String()) },
		Rate:  1, Kinds: []registrytest.Fault{registrytest.FlipByte},
	})
	jobs := jobsFor(imgs, proxy.Host(), dst.Host())
	for _, mono := range []int64{1 << 20, 1024} { // monolithic PUT, then streaming PATCH
		t.Run(fmt.Sprint("monolithic-max-", mono), func(t *testing.T) {
			checkCorrupt(t, jobs, imgs, bad, registry.New(registry.Options{Retry: mirrortest.FastRetry, MonolithicMax: mono}))
		})
	}
}

func checkCorrupt(t *testing.T, jobs []Job, imgs []pushed, bad digest.Digest, dstReg *registry.Client) {
	rep, err := Copy(context.Background(), testRegistry(), dstReg, jobs, Options{Retry: mirrortest.FastRetry})
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("err %v, want ErrFailed", err)
	}
	for i, im := range rep.Images {
		switch {
		case i == 2 && (im.Status != StatusFailed || !strings.Contains(im.Err, "digest")):
			t.Fatalf("corrupt image: %+v", im)
		case i != 2 && im.Status == StatusFailed:
			t.Fatalf("image %d: %+v", i, im)
		}
	}
	reg := testRegistry()
	for _, j := range jobs {
		ok, err := reg.BlobExists(context.Background(), j.Dest, endpoint.Descriptor{Digest: bad})
		if err != nil || ok {
			t.Fatalf("%s holds the corrupt blob (ok=%v err=%v)", j.Dest, ok, err)
		}
	}
	if ok, _ := reg.ManifestExists(context.Background(), jobs[2].Dest, "v2", imgs[2].Digest); ok {
		t.Fatal("the failed image was tagged")
	}
	checkDest(t, append(append([]Job{}, jobs[:2]...), jobs[3]))
}

func uniqueBlobsExcept(imgs []pushed, skip int) map[digest.Digest]bool {
	u := map[digest.Digest]bool{}
	for i, im := range imgs {
		if i != skip {
			for _, b := range im.Blobs {
				u[b] = true
			}
		}
	}
	return u
}

// settledCommits returns the blobs reg committed once the count held still for
// 200 ms (at most 5 s).
func settledCommits(reg *registrytest.Registry) int64 {
	n := reg.Counts().Committed()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		m := reg.Counts().Committed()
		if m == n {
			break
		}
		n = m
	}
	return n
}

func TestCopyCancelThenResume(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	imgs := pushImages(t, src.Host(), 10, 3, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(400 + i), BaseSeed: uint64(i % 3), BaseLayers: 2, Layers: 2, LayerSize: 32 << 10}
	})
	jobs := jobsFor(imgs, src.Host(), dst.Host())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var blobsSeen atomic.Int64
	rep1, err := Copy(ctx, testRegistry(), testRegistry(), jobs, Options{ParallelImages: 2, ParallelLayers: 2, Retry: mirrortest.FastRetry,
		Progress: func(ev ProgressEvent) {
			if ev.Image == nil && blobsSeen.Add(1) == 8 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: err %v, want context.Canceled", err)
	}
	// The registry may still be finishing a commit the cancelled client
	// abandoned: count once the number stops moving.
	first := settledCommits(dst)
	unique := int64(len(uniqueBlobs(imgs)))
	if first == 0 || first >= unique {
		t.Fatalf("first run committed %d of %d blobs; want a partial copy", first, unique)
	}
	// A commit the registry finished just as ctx was cancelled is not in the report.
	if rep1.BlobsSent > first || rep1.BlobsSent < first-2 {
		t.Fatalf("report says %d blobs sent, registry committed %d", rep1.BlobsSent, first)
	}
	rep2, err := Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if total := dst.Counts().Committed(); total != unique || rep2.BlobsSent != unique-first {
		// Every blob committed exactly once over both runs.
		t.Fatalf("blobs committed over both runs %d (second run %d), want %d (second %d)", total, rep2.BlobsSent, unique, unique-first)
	}
	checkDest(t, jobs)
}

// TestIncrementalRunMountsFromEarlierRuns: a later run that adds an image
// sharing layers with images an earlier run mirrored (into other repositories)
// mounts those layers instead of uploading them again.
func TestIncrementalRunMountsFromEarlierRuns(t *testing.T) {
	src, dst := registrytest.Start(t), registrytest.Start(t)
	first := imagetest.MustPush(t, src.Host()+"/team-a/app:1", fakeimage.Spec{Seed: 1, BaseSeed: 9, BaseLayers: 3, Layers: 1})
	second := imagetest.MustPush(t, src.Host()+"/team-b/app:1", fakeimage.Spec{Seed: 2, BaseSeed: 9, BaseLayers: 3, Layers: 1})
	job := func(p imagetest.Pushed, repo string) Job {
		return Job{Source: src.Host() + "/" + repo, Digest: p.Digest, Dest: dst.Host() + "/m/" + repo, Tags: []string{"1"}}
	}
	reg := testRegistry()
	if _, err := Copy(context.Background(), reg, reg, []Job{job(first, "team-a/app")}, Options{Retry: mirrortest.FastRetry}); err != nil {
		t.Fatal(err)
	}
	dst.Reset()
	rep, err := Copy(context.Background(), reg, reg, []Job{job(first, "team-a/app"), job(second, "team-b/app")}, Options{Retry: mirrortest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	c := dst.Counts()
	// Only the second image's config and unique layer are new; its 3 base layers
	// are mounted from team-a/app.
	if c.BlobsCommitted != 2 || c.Mounted != 3 || rep.BlobsSent != 2 || rep.BlobsMounted != 3 {
		t.Fatalf("committed %d, mounted %d (report: sent %d, mounted %d); want 2 uploads and 3 mounts", c.BlobsCommitted, c.Mounted, rep.BlobsSent, rep.BlobsMounted)
	}
}

// fastRetry10 is mirrortest.FastRetry with ten retries.
var fastRetry10 = &retry.Policy{Times: 10, Base: mirrortest.FastRetry.Base, Max: mirrortest.FastRetry.Max}
