package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// e2eCatalog is oc-mirror's own end-to-end test index: three packages (foo needs
// bar through olm.package.required), bundle images by tag, related images by
// digest, all in one repository. It is vendored (testdata/e2e-catalog/SOURCE.md)
// so that these tests never skip for want of ../shared.
var e2eCatalog = filepath.Join("..", "testdata", "e2e-catalog", "configs")

type env struct {
	src       *registrytest.Registry
	seeded    *seed.Result
	extra     string // an additionalImages reference at the source
	extraHash string
	regconf   string // the registries.conf runs read the source through (setupStable)
}

func setup(t *testing.T) *env {
	t.Helper()
	src := registrytest.Start(t)
	res, err := seed.Seed(context.Background(), seed.Options{
		Registry: src.Host(), CatalogDir: e2eCatalog, CatalogRepo: "redhatgov/oc-mirror-index",
		CatalogTag: "v1", MultiArchEvery: 3, Insecure: true, WorkDir: t.TempDir(),
		CatalogPlatforms: []string{"linux/amd64", "linux/arm64"},
	})
	if err != nil {
		t.Fatal(err)
	}
	extra := src.Host() + "/tools/debug:1.0"
	p := imagetest.MustPush(t, extra, fakeimage.Spec{Seed: 99, Layers: 2, Platforms: []string{"linux/amd64", "linux/arm64"}})
	return &env{src: src, seeded: res, extra: extra, extraHash: p.Digest.String()}
}

func (e *env) config(t *testing.T, packages string) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
    packages:
%s
  additionalImages:
  - name: %s
  blockedImages:
  - name: ".*/nothing-matches-this$"
`, e.seeded.Catalog, packages, e.extra)
	p := filepath.Join(t.TempDir(), "imageset.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// dest is the destination group with only its location.
func dest(l location.Location) pipeline.DestinationOptions {
	return pipeline.DestinationOptions{Location: l}
}

func opts(cfgPath string) pipeline.Options {
	return pipeline.Options{ConfigPath: cfgPath, Network: pipeline.NetworkOptions{ParallelImages: 4, ParallelLayers: 4, RetryTimes: 5}}
}

// checkMirrored asserts every planned image is at the destination by digest, and
// that the rebuilt catalog pulls, validates and names only mirrored images.
func checkMirrored(t *testing.T, res *pipeline.Result, dst *registrytest.Registry) {
	t.Helper()
	reg := registry.New(registry.Options{})
	ctx := context.Background()
	mirrored := map[string]bool{}
	for _, im := range plannedAt(t, res, dst) {
		m, err := reg.Manifest(ctx, im.DestRepo, im.Digest.String())
		if err != nil {
			t.Errorf("%s not at the destination by digest: %v", im.Destination(), err)
			continue
		}
		if m.Digest != im.Digest {
			t.Errorf("%s: digest %s, want %s", im.Destination(), m.Digest, im.Digest)
		}
		for _, tag := range im.Tags {
			d, err := reg.Resolve(ctx, im.DestRepo+":"+tag)
			if err != nil || d.Digest != im.Digest {
				t.Errorf("tag %s:%s resolves to %v (%v), want %s", im.DestRepo, tag, d.Digest, err, im.Digest)
			}
		}
		mirrored[im.Source] = true
	}
	if len(res.Catalogs) != 1 {
		t.Fatalf("catalogs: %+v", res.Catalogs)
	}
	c := res.Catalogs[0]
	fc, err := catalogimage.Fetch(ctx, c.DestRepo+":"+c.Tag, t.TempDir(), catalogimage.FetchOptions{})
	if err != nil {
		t.Fatalf("pull the rebuilt catalog: %v", err)
	}
	if fc.Digest != c.Digest {
		t.Errorf("rebuilt catalog digest %s, plan says %s", fc.Digest, c.Digest)
	}
	checkRebuiltCatalog(t, fc.ConfigsDir, mirrored)
	for _, f := range []string{"plan.json", "mapping.txt", "results.json"} {
		if fi, err := os.Stat(filepath.Join(res.WorkingDir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		} else if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v, want 0644", f, fi.Mode().Perm())
		}
	}
	if len(res.ClusterResources) == 0 {
		t.Errorf("no cluster resources written")
	}
}

func TestMirrorToMirror(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	ws := t.TempDir()
	o := opts(e.config(t, "    - name: foo"))
	o.Workspace = location.File(ws)
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkMirroredWithGGCR(t, res, dst)
	pkgs := res.Catalogs[0].Packages
	if strings.Join(pkgs, ",") != "bar,foo" {
		t.Errorf("kept packages %v, want bar (a dependency of foo) and foo", pkgs)
	}
	if res.BlobsSent == 0 {
		t.Errorf("nothing sent: %+v", res)
	}
	// The destination received each blob at most once.
	c := dst.Counts()
	if c.Committed() != res.BlobsSent {
		t.Errorf("registry committed %d blobs, engine says it sent %d", c.Committed(), res.BlobsSent)
	}

	// A second run sends nothing.
	dst.Reset()
	res2, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	c = dst.Counts()
	if c.UploadPOST != 0 || c.BlobsCommitted != 0 || c.ManifestPUT != 0 || res2.BytesSent != 0 {
		t.Errorf("second run sent something: %+v (engine: %d bytes)", c, res2.BytesSent)
	}
	if res2.Catalogs[0].Digest != res.Catalogs[0].Digest {
		t.Errorf("rebuilt catalog digest changed between runs: %s then %s", res.Catalogs[0].Digest, res2.Catalogs[0].Digest)
	}
	// Both runs are in the history; the second added nothing.
	h, err := pipeline.ReadHistory(o.Workspace)
	if err != nil || len(h.Runs) != 2 || h.Runs[0].Workflow != "mirror-to-mirror" || len(h.Runs[0].Images) != len(res.Plan.Jobs()) {
		t.Fatalf("history: %v, %+v", err, h)
	}
	var text strings.Builder
	if err := h.WriteText(&text); err != nil || !strings.Contains(text.String(), "; 0 new at the destination") {
		t.Errorf("history text: %v\n%s", err, text.String())
	}
	for _, im := range h.Runs[0].Images {
		if im.Kind == mirror.KindOperator && (len(im.WantedBy) == 0 || im.WantedBy[0].Package == "" || im.WantedBy[0].Bundle == "") {
			t.Errorf("%s: wanted by %+v, want its package and bundle", im.Source, im.WantedBy)
		}
		if im.Kind == mirror.KindGeneric && (len(im.WantedBy) != 1 || im.WantedBy[0].Kind != workspace.WantAdditional) {
			t.Errorf("%s: wanted by %+v, want additionalImages", im.Source, im.WantedBy)
		}
	}
}

func TestDryRun(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	o := opts(e.config(t, "    - name: baz"))
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Run.DryRun = true
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.DryRun == nil || len(res.DryRun.Missing) != len(res.Plan.Jobs()) || res.DryRun.BytesToSend == 0 {
		t.Fatalf("dry run: %+v", res.DryRun)
	}
	if c := dst.Counts(); c.UploadPOST+c.ManifestPUT != 0 {
		t.Errorf("dry run wrote to the destination: %+v", c)
	}
	b, err := os.ReadFile(filepath.Join(res.WorkingDir, "dry-run", "missing.txt"))
	if err != nil || strings.Count(string(b), "\n") != len(res.Plan.Jobs()) {
		t.Errorf("missing.txt: %q, %v", b, err)
	}
}

func TestMirrorToDiskToMirror(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	o := opts(e.config(t, "    - name: baz"))
	o.Destination.Location = location.File(dir)
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Archive == nil || len(res.Archive.Chunks) == 0 {
		t.Fatalf("no archive: %+v", res.Archive)
	}
	if res.Archive.Dir != filepath.Join(dir, "batch-0001") || res.Archive.Batch != 1 {
		t.Errorf("first archive went to %s (batch %d), want %s/batch-0001", res.Archive.Dir, res.Archive.Batch, dir)
	}
	if _, err := archive.Verify(context.Background(), res.Archive.Dir); err != nil {
		t.Fatalf("verify: %v", err)
	}

	// Disk-to-mirror with the source gone.
	e.src.Stop()
	dst := registrytest.Start(t)
	o2 := opts(o.ConfigPath)
	o2.Archive.From = location.File(dir)
	o2.Workspace = location.File(t.TempDir())
	o2.Destination.Location = location.Docker(dst.Host() + "/airgap")
	res2, err := pipeline.Mirror(context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	checkMirrored(t, res2, dst)
	if len(res2.Plan.Images) != len(res.Plan.Images) {
		t.Errorf("disk-to-mirror pushed %d images, the archive has %d", len(res2.Plan.Images), len(res.Plan.Images))
	}
	// The additional image kept its digest.
	var found bool
	for _, im := range res2.Plan.Images {
		if im.Source == e.extra {
			found = im.Digest.String() == e.extraHash
		}
	}
	if !found {
		t.Errorf("additional image %s not mirrored with its digest", e.extra)
	}
	// Disk-to-mirror records the run; mirror-to-disk wrote to no registry.
	h, err := pipeline.ReadHistory(o2.Workspace)
	if err != nil || len(h.Runs) != 1 || h.Runs[0].Workflow != "disk-to-mirror" || h.Runs[0].Destination != dst.Host()+"/airgap" || !h.Runs[0].Complete {
		t.Fatalf("disk-to-mirror history: %v, %+v", err, h)
	}
	for _, im := range h.Runs[0].Images {
		if im.Kind == mirror.KindOperator && (len(im.WantedBy) == 0 || im.WantedBy[0].Bundle == "") {
			t.Errorf("disk-to-mirror: %s wanted by %+v, want its package and bundle", im.Source, im.WantedBy)
		}
	}
	if h, err := pipeline.ReadHistory(location.File(dir)); err != nil || len(h.Runs) != 0 {
		t.Errorf("mirror-to-disk history: %v, %+v", err, h)
	}
}

func TestBadInvocations(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "isc.yaml")
	os.WriteFile(cfg, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror: {}\n"), 0o644)
	for _, tc := range []struct {
		name string
		o    pipeline.Options
		want string
	}{
		{"no config", pipeline.Options{Destination: dest(location.File("/tmp/x"))}, "-c imageset.yaml"},
		{"m2m without workspace", pipeline.Options{ConfigPath: cfg, Destination: dest(location.Docker("localhost:5000/ns"))}, "--workspace"},
		{"no destination", pipeline.Options{ConfigPath: cfg}, "docker://"},
		{"d2m to file", pipeline.Options{ConfigPath: cfg, Archive: pipeline.ArchiveOptions{From: location.File("/tmp/x")}, Destination: dest(location.File("/tmp/y"))}, "registry destination"},
		{"missing archive", pipeline.Options{ConfigPath: cfg, Archive: pipeline.ArchiveOptions{From: location.File(t.TempDir())}, Workspace: location.File(t.TempDir()), Destination: dest(location.Docker("localhost:5000/ns"))}, ""},
		{"workspace inside the archive", pipeline.Options{ConfigPath: cfg, Archive: pipeline.ArchiveOptions{From: location.File("/tmp/arch")}, Workspace: location.File("/tmp/arch/ws"), Destination: dest(location.Docker("localhost:5000/ns"))}, "inside the archive folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.Mirror(context.Background(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestResultsJSON checks the record a run leaves behind.
func TestResultsJSON(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	o := opts(e.config(t, "    - name: baz"))
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(res.WorkingDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r pipeline.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Images) != len(res.Plan.Images) || r.Failed != 0 {
		t.Fatalf("results.json: %d images, %d failed", len(r.Images), r.Failed)
	}
	for _, im := range r.Images {
		if im.Status != transfer.StatusCopied && im.Status != transfer.StatusSkipped {
			t.Errorf("%s: status %s", im.Source, im.Status)
		}
		if _, err := name.ParseReference(im.Destination); err != nil {
			t.Errorf("destination %q: %v", im.Destination, err)
		}
	}
	_ = remote.Head
}

// TestPartialFailure: an image that cannot be resolved fails alone; everything else
// is mirrored, the error wraps ErrIncomplete, results.json lists the failure, and
// blockedImages keeps matching images out.
func TestPartialFailure(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	cfg := fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
    packages:
    - name: baz
  additionalImages:
  - name: %s
  - name: %s/tools/absent:1.0
  blockedImages:
  - name: "/tools/debug:"
`, e.seeded.Catalog, e.extra, e.src.Host())
	p := filepath.Join(t.TempDir(), "isc.yaml")
	os.WriteFile(p, []byte(cfg), 0o644)
	o := opts(p)
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	res, err := pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, pipeline.ErrIncomplete) {
		t.Fatalf("error %v, want ErrIncomplete", err)
	}
	if res.Failed != 1 {
		t.Fatalf("failed = %d, want 1: %+v", res.Failed, res.Images)
	}
	if len(res.Blocked) != 1 || res.Blocked[0] != e.extra {
		t.Errorf("blocked = %v, want [%s]", res.Blocked, e.extra)
	}
	for _, im := range res.Images {
		switch {
		case strings.Contains(im.Source, "/tools/absent"):
			if im.Status != transfer.StatusFailed || im.Error == "" {
				t.Errorf("absent image: %+v", im)
			}
		case im.Status != transfer.StatusCopied:
			t.Errorf("%s: %s %s", im.Source, im.Status, im.Error)
		}
	}
	b, _ := os.ReadFile(filepath.Join(res.WorkingDir, "results.json"))
	if !strings.Contains(string(b), "tools/absent") {
		t.Errorf("results.json does not list the failed image")
	}
}

// TestFlakySource: the source answers 429/503, cuts connections and truncates
// bodies for a third of the blob downloads; the run still completes and every
// image arrives with its digest.
func TestFlakySource(t *testing.T) {
	t.Parallel()
	src := registrytest.Start(t)
	proxy := registrytest.NewFaultProxy(t, src.Host(), registrytest.FaultPlan{
		Rate: 0.35, Seed: 7, RetryAfter: "0",
		Kinds: []registrytest.Fault{registrytest.TooManyRequests, registrytest.Unavailable, registrytest.CutMidBody, registrytest.TruncateBody},
	})
	res, err := seed.Seed(context.Background(), seed.Options{
		Registry: proxy.Host(), CatalogDir: e2eCatalog, CatalogRepo: "redhatgov/oc-mirror-index",
		MultiArchEvery: 3, Insecure: true, WorkDir: t.TempDir(), LayerSize: 64 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	extra := proxy.Host() + "/tools/debug:1.0"
	imagetest.MustPush(t, extra, fakeimage.Spec{Seed: 5, Layers: 2, LayerSize: 64 << 10})
	e := &env{src: src, seeded: res, extra: extra}
	dst := registrytest.Start(t)
	o := opts(e.config(t, "    - name: foo\n    - name: baz"))
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	out, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkMirrored(t, out, dst)
	if n := len(proxy.Applied()); n == 0 {
		t.Fatalf("the proxy injected no fault")
	}
	t.Logf("faults injected: %v", proxy.Applied())
}

// TestDestinationConflict: an additional image that would land on the rebuilt
// catalog's tag fails instead of silently replacing it.
func TestDestinationConflict(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.extra = e.seeded.Catalog // the original catalog, same destination as the rebuilt one
	dst := registrytest.Start(t)
	o := opts(e.config(t, "    - name: baz"))
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	res, err := pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, pipeline.ErrIncomplete) || res.Failed != 1 {
		t.Fatalf("err %v, failed %d: want one conflicting image", err, res.Failed)
	}
	for _, im := range res.Images {
		if im.Status == transfer.StatusFailed && !strings.Contains(im.Error, "already the destination of") {
			t.Errorf("%s failed with %q", im.Source, im.Error)
		}
	}
}
