package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/pipeline"
)

// gate stands in front of a registry: the first request match selects waits
// until ready says so (at most gateWait), then snap records what the test
// wants to know at that moment. Without the overlap under test the wait runs
// out and the test fails on what snap recorded: no clock is asserted.
type gate struct {
	host     string
	mu       sync.Mutex
	released bool
	ready    func() bool
	snap     func()
}

// gateWait bounds a gate's wait (generous: a loaded machine).
const gateWait = 60 * time.Second

func startGate(t *testing.T, target string, match func(*http.Request) bool, ready func() bool, snap func()) *gate {
	t.Helper()
	g := &gate{ready: ready, snap: snap}
	u, _ := url.Parse("http://" + target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if match(r) {
			g.wait()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.host = strings.TrimPrefix(srv.URL, "http://")
	return g
}

func (g *gate) wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released {
		return
	}
	for deadline := time.Now().Add(gateWait); time.Now().Before(deadline) && !g.ready(); {
		time.Sleep(10 * time.Millisecond)
	}
	g.released = true
	g.snap()
}

// gatedSource is a source whose manifest of repository gated (the image the
// plan resolves last) waits until dst has committed a blob, and records what
// dst had received by then.
type gatedSource struct {
	*gate
	blobsBefore, manBefor int64
	onRelease             func()
}

func startGatedSource(t *testing.T, src *registrytest.Registry, gated string, dst *registrytest.Registry) *gatedSource {
	t.Helper()
	g := &gatedSource{}
	g.gate = startGate(t, src.Host(), func(r *http.Request) bool {
		return strings.HasPrefix(r.URL.Path, "/v2/"+gated+"/manifests/")
	}, func() bool { return dst.Counts().Committed() > 0 }, func() {
		c := dst.Counts()
		g.blobsBefore, g.manBefor = c.Committed(), c.ManifestPUT
		if g.onRelease != nil {
			g.onRelease()
		}
	})
	return g
}

// prefetchConfig writes a configuration of n images named by tag at host
// (apps/imgN:1.0), with extra lines appended to the mirror section.
func prefetchConfig(t *testing.T, host string, n int, extra string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - name: %s/apps/img%d:1.0\n", host, i)
	}
	b.WriteString(extra)
	cfg := filepath.Join(t.TempDir(), "imageset.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func pushImages(t *testing.T, src *registrytest.Registry, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		imagetest.MustPush(t, fmt.Sprintf("%s/apps/img%d:1.0", src.Host(), i), fakeimage.Spec{Seed: uint64(300 + i), Layers: 2})
	}
}

// Blobs move to the destination while the plan is still being made (the
// gated image is not resolved yet), but no manifest is pushed before the plan
// is final; the report and the progress count every blob once and reach
// their totals.
func TestPrefetchSendsBlobsWhilePlanning(t *testing.T) {
	t.Parallel()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	const n = 4
	pushImages(t, src, n)
	g := startGatedSource(t, src, "apps/img3", dst)
	o := opts(prefetchConfig(t, g.host, n, ""))
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	o.Network.ParallelImages = 1 // img3 is resolved after the others have started
	var last pipeline.Progress
	o.Output.Progress = func(p pipeline.Progress) { last = p }
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if g.blobsBefore == 0 || g.manBefor != 0 {
		t.Errorf("when the last image was resolved the destination had %d blobs and %d manifests, want some blobs and no manifest", g.blobsBefore, g.manBefor)
	}
	c := dst.Counts()
	if res.BlobsSent+res.BlobsMounted != 3*n || res.BlobsSent != c.Committed() {
		t.Errorf("report: %d blobs sent, %d mounted; destination committed %d; want %d blobs each sent once", res.BlobsSent, res.BlobsMounted, c.Committed(), 3*n)
	}
	var perImage int64
	for _, im := range res.Copy.Images {
		perImage += im.BytesSent
		if im.Status != "copied" {
			t.Errorf("%s: %s %s", im.Job.Source, im.Status, im.Err)
		}
	}
	if perImage != res.BytesSent || res.BytesSent != c.Uploaded() {
		t.Errorf("bytes: per image %d, report %d, destination received %d: want the same", perImage, res.BytesSent, c.Uploaded())
	}
	if last.BlobsDone != last.BlobsTotal || last.BytesDone != last.BytesTotal || last.ImagesDone != last.ImagesTotal || last.BlobsTotal != 3*n {
		t.Errorf("last progress %+v, want every blob (%d) and image done", last, 3*n)
	}
	checkTagged(t, dst, n)

	// A no-op re-run, measured for the progress bar too: the prefetch and the
	// measuring share their questions, one per image.
	dst.Reset()
	if _, err := pipeline.Mirror(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if c := dst.Counts(); c.ManifestHEAD != n || requestsBeyondBase(c) != n {
		t.Errorf("no-op re-run: destination %v, want one manifest HEAD per image (%d) and nothing else", c.ByPath, n)
	}
}

// checkTagged asserts that images 0..n-1 are at dst under their tag.
func checkTagged(t *testing.T, dst *registrytest.Registry, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := registry.New(registry.Options{}).Resolve(context.Background(), fmt.Sprintf("%s/mirror/apps/img%d:1.0", dst.Host(), i)); err != nil {
			t.Errorf("image %d not mirrored: %v", i, err)
		}
	}
}

// A run interrupted while planning (blobs already moving) leaves no manifest
// and no tag at the destination, and the same command run again completes.
func TestPrefetchInterruptedWhilePlanning(t *testing.T) {
	t.Parallel()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	const n = 4
	pushImages(t, src, n)
	g := startGatedSource(t, src, "apps/img3", dst)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g.onRelease = cancel
	o := opts(prefetchConfig(t, g.host, n, ""))
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	o.Network.ParallelImages = 1
	if _, err := pipeline.Mirror(ctx, o); err == nil {
		t.Fatal("interrupted run: no error")
	}
	if g.blobsBefore == 0 {
		t.Error("no blob sent before the interruption: the test does not interrupt a prefetch")
	}
	if c := dst.Counts(); c.ManifestPUT != 0 {
		t.Errorf("interrupted while planning: %d manifests pushed (%v)", c.ManifestPUT, c.ByPath)
	}
	for i := 0; i < n; i++ {
		if _, err := registry.New(registry.Options{}).Resolve(context.Background(), fmt.Sprintf("%s/mirror/apps/img%d:1.0", dst.Host(), i)); err == nil {
			t.Errorf("image %d tagged at the destination by an interrupted plan", i)
		}
	}
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 {
		t.Errorf("re-run: %d failed", res.Failed)
	}
	checkTagged(t, dst, n)
}

// An image blockedImages removes gets nothing at the destination, and the
// image that loses a destination conflict (two entries, one target) gets no
// manifest there, even though planning had handed it to the prefetch.
func TestPrefetchBlockedAndConflicting(t *testing.T) {
	t.Parallel()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	const n = 3
	pushImages(t, src, n)
	other := imagetest.MustPush(t, src.Host()+"/apps/other:2.0", fakeimage.Spec{Seed: 399, Layers: 2})
	extra := fmt.Sprintf("  - name: %s/apps/other:2.0\n    targetRepo: apps/img0\n    targetTag: \"1.0\"\n  blockedImages:\n  - name: \".*/apps/img2:.*\"\n", src.Host())
	o := opts(prefetchConfig(t, src.Host(), n, extra))
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	res, err := pipeline.Mirror(context.Background(), o)
	if err == nil {
		t.Fatal("a destination conflict: no error")
	}
	if len(res.Blocked) != 1 || res.Failed != 1 {
		t.Fatalf("blocked %v, %d failed: want img2 blocked and the conflict failed", res.Blocked, res.Failed)
	}
	reg := registry.New(registry.Options{})
	ctx := context.Background()
	if ok, err := reg.ManifestExists(ctx, dst.Host()+"/mirror/apps/img0", other.Digest.String(), other.Digest); err != nil || ok {
		t.Errorf("the conflicting image's manifest at the destination: %v %v", ok, err)
	}
	if _, err := reg.Resolve(ctx, dst.Host()+"/mirror/apps/img2:1.0"); err == nil {
		t.Error("blocked image mirrored")
	}
	if known, err := reg.RepositoryKnown(ctx, dst.Host()+"/mirror/apps/img2"); err != nil || known {
		t.Errorf("blocked image's repository exists at the destination (%v)", err)
	}
	checkTagged(t, dst, 2)
}

// The catalog is fetched while the preflight still waits for the destination
// (its first /v2/ ping is held until the source served a manifest).
func TestPreflightBesideCatalogFetch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	var fetched int64
	g := startGate(t, dst.Host(), func(r *http.Request) bool { return r.URL.Path == "/v2/" },
		func() bool { return e.src.Counts().ManifestGET > 0 },
		func() { fetched = e.src.Counts().ManifestGET })
	o := opts(e.config(t, "    - name: baz"))
	o.Destination.Location = location.Docker(g.host + "/mirror")
	o.Workspace = location.File(t.TempDir())
	if _, err := pipeline.Mirror(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if fetched == 0 {
		t.Error("the source served no manifest while the destination's preflight ping waited: the catalog stage waited for the preflight")
	}
}
