package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// The registry matrix (docs/registries.md): every workflow against every kind
// of registry of registrytest.Kinds, source and destination of the same kind,
// through the library calls the commands make. What reached each registry is
// checked with go-containerregistry (registrytest.Target), never with airlock's
// own client. Subtests are named WORKFLOW/KIND ("m2m/distribution-2.8").

// matrixEnv is one kind's pair of registries: a source seeded with the e2e
// catalog and an additional multi-arch image, and a destination.
type matrixEnv struct {
	kind     string
	src, dst *registrytest.Target
	catalog  string // the catalog at the source (host/repo:tag)
	extra    string // the additional image at the source (host/repo:tag)
	auth     string // auth.json: the source's pull-only user, the destination's push user

	// seedOnce seeds the source (into seedDir) for the first workflow that
	// needs it; seedErr is how that went.
	seedOnce sync.Once
	seedDir  string
	seedErr  error
}

// newMatrixEnv starts kind's registries; seed fills the source.
func newMatrixEnv(t *testing.T, kind string) *matrixEnv {
	t.Helper()
	e := &matrixEnv{kind: kind, src: registrytest.StartKind(t, kind), dst: registrytest.StartKind(t, kind)}
	e.extra = e.src.Host + "/tools/debug:1.0"
	e.auth = registrytest.WriteAuthFile(t, map[string]registrytest.Credentials{e.src.Host: e.src.Pull, e.dst.Host: e.dst.Push})
	return e
}

// seed pushes the e2e catalog with its images and the additional image to the
// source (safe to run for several kinds at once).
func (e *matrixEnv) seed(workDir string) error {
	if e.src.Token != nil {
		// go-containerregistry's bearer transport retries a request after
		// refreshing an expired token with the body already consumed (a PATCH
		// then fails: "ContentLength=2048 with Body length 0"): the seed gets
		// long-lived tokens, the runs short-lived ones again.
		e.src.Token.SetTTL(time.Minute)
		defer e.src.Token.SetTTL(registrytest.TokenTTL)
	}
	ctx := context.Background()
	res, err := seed.Seed(ctx, seed.Options{
		Registry: e.src.Host, CatalogDir: e2eCatalog, CatalogRepo: "redhatgov/oc-mirror-index", CatalogTag: "v1",
		MultiArchEvery: 3, Insecure: !e.src.TLS(), WorkDir: workDir, Remote: e.src.Remote(e.src.Push), Parallel: seedParallel(e.kind),
	})
	if err != nil {
		return fmt.Errorf("%s: seed the source: %w", e.kind, err)
	}
	e.catalog = res.Catalog
	if _, err := imagetest.Push(ctx, e.extra, fakeimage.Spec{Seed: 99, Layers: 2, Platforms: []string{"linux/amd64", "linux/arm64"}}, e.src.Remote(e.src.Push)...); err != nil {
		return fmt.Errorf("%s: push %s: %w", e.kind, e.extra, err)
	}
	return nil
}

// seedParallel bounds the seed's concurrent pushes: go-containerregistry's
// concurrent pushes of images sharing blobs into one repository of
// Distribution 2.8 fail now and then (a manifest PUT answered DIGEST_INVALID /
// MANIFEST_BLOB_UNKNOWN), so its source is seeded one image at a time.
func seedParallel(kind string) int {
	if kind == registrytest.Distribution28 {
		return 1
	}
	return 8
}

// config writes the runs' configuration: package foo of the catalog (bar
// comes as its dependency), the additional image, and more additional images.
func (e *matrixEnv) config(t *testing.T, more ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "imageset.yaml")
	extra := ""
	for _, m := range append([]string{e.extra}, more...) {
		extra += "  - name: " + m + "\n"
	}
	writeMatrixFile(t, p, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
    packages:
    - name: foo
  additionalImages:
%s`, e.catalog, extra))
	return p
}

// options are the mirror options of a run from e.src to NS at e.dst.
func (e *matrixEnv) options(t *testing.T, ns string) pipeline.Options {
	o := opts(e.config(t))
	o.AuthFile, o.Source.CertDir, o.Destination.CertDir = e.auth, e.src.CertDir, e.dst.CertDir
	o.Destination.Location = location.Docker(e.dst.Host + "/" + ns)
	return o
}

type matrixWorkflow struct {
	name string
	run  func(t *testing.T, e *matrixEnv)
	// noSeed: the workflow does not read the seeded catalog.
	noSeed bool
}

var matrixWorkflows = []matrixWorkflow{
	{name: "m2m", run: matrixMirrorToMirror},
	{name: "m2d-d2m", run: matrixDiskToMirror},
	{name: "dry-run", run: matrixDryRun},
	{name: "delete", run: matrixDelete},
	{name: "shards", run: matrixShards},
	{name: "list", run: matrixList},
	{name: "helm", run: matrixHelm},
	{name: "release", run: matrixRelease, noSeed: true},
}

func TestRegistryMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the registry matrix: 12 registries, 48 workflow runs")
	}
	envs := map[string]*matrixEnv{}
	for _, kind := range registrytest.Kinds {
		if registrytest.Missing(kind) != "" {
			continue
		}
		e := newMatrixEnv(t, kind)
		e.seedDir = t.TempDir()
		envs[kind] = e
	}
	// The kinds of one workflow run side by side (each has its own
	// registries; the workflows use their own namespaces). A kind's source
	// is seeded by the first workflow that needs the catalog.
	for _, wf := range matrixWorkflows {
		t.Run(wf.name, func(t *testing.T) {
			for _, kind := range registrytest.Kinds {
				t.Run(kind, func(t *testing.T) {
					t.Parallel()
					e := envs[kind]
					if e == nil {
						t.Skipf("registry %s: %s", kind, registrytest.Missing(kind))
					}
					if !wf.noSeed {
						e.seedOnce.Do(func() { e.seedErr = e.seed(e.seedDir) })
						if e.seedErr != nil {
							t.Fatal(e.seedErr)
						}
					}
					wf.run(t, e)
				})
			}
		})
	}
}

func matrixMirrorToMirror(t *testing.T, e *matrixEnv) {
	o := e.options(t, "m2m")
	o.Workspace = location.File(t.TempDir())
	served := cdnServed(e.src)
	var expired int64
	if e.dst.Token != nil {
		// Tokens expire in the middle of the copy: after the first image, the
		// copy waits until every token airlock holds has expired, so that the
		// rest needs fresh ones.
		expired = e.dst.Token.Expired()
		o.Network.ParallelImages = 1
		waited := false
		o.Output.Progress = func(p pipeline.Progress) {
			if p.Stage == "copy" && p.ImagesDone >= 1 && !waited {
				waited = true
				time.Sleep(registrytest.TokenTTL + 1100*time.Millisecond)
			}
		}
	}
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkAtDestination(t, e, res, "m2m")
	if e.dst.Token != nil && e.dst.Token.Expired() == expired {
		t.Errorf("no request met an expired token: the refresh was not exercised")
	}
	if e.src.CDN != nil && cdnServed(e.src) == served {
		t.Errorf("no blob was read through the source's CDN redirects")
	}
	// A second run finds everything there.
	res2, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res2.BlobsSent != 0 {
		t.Errorf("second run sent %d blobs", res2.BlobsSent)
	}
}

func matrixDiskToMirror(t *testing.T, e *matrixEnv) {
	o := e.options(t, "unused")
	dir := t.TempDir()
	o.Destination.Location = location.File(dir)
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatalf("mirror-to-disk: %v", err)
	}
	o2 := e.options(t, "d2m")
	o2.Archive.From = location.File(res.Archive.Dir)
	o2.Workspace = location.File(t.TempDir())
	res2, err := pipeline.Mirror(context.Background(), o2)
	if err != nil {
		t.Fatalf("disk-to-mirror: %v", err)
	}
	checkAtDestination(t, e, res2, "d2m")
	if len(res2.Plan.Images) != len(res.Plan.Images) {
		t.Errorf("disk-to-mirror pushed %d images, the archive has %d", len(res2.Plan.Images), len(res.Plan.Images))
	}
}

func matrixDryRun(t *testing.T, e *matrixEnv) {
	o := e.options(t, "dry")
	o.Workspace = location.File(t.TempDir())
	o.Run.DryRun = true
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.DryRun == nil {
		t.Fatal("no dry-run estimate")
	}
	if len(res.DryRun.Missing) != len(res.Plan.Jobs()) || res.DryRun.BytesToSend == 0 {
		t.Fatalf("dry run: %d missing of %d jobs, %d bytes to send", len(res.DryRun.Missing), len(res.Plan.Jobs()), res.DryRun.BytesToSend)
	}
	repos, err := e.dst.Repositories(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range repos {
		if strings.HasPrefix(r, "dry/") {
			t.Errorf("the dry run wrote %s", r)
		}
	}
}

func matrixDelete(t *testing.T, e *matrixEnv) {
	ctx := context.Background()
	ws := location.File(t.TempDir())
	o := e.options(t, "del")
	o.Workspace = ws
	res, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkAtDestination(t, e, res, "del")
	delCfg := filepath.Join(t.TempDir(), "delete-isc.yaml")
	writeMatrixFile(t, delCfg, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: DeleteImageSetConfiguration
delete:
  additionalImages:
  - name: %s
`, e.extra))
	dopts := deletion.Options{Workspace: ws, Destination: o.Destination.Location, AuthFile: e.auth, DestCertDir: e.dst.CertDir, RetryTimes: 2}
	gen := dopts
	gen.Generate, gen.ConfigPath = true, delCfg
	plan, err := pipeline.Delete(ctx, gen)
	if err != nil {
		t.Fatal(err)
	}
	// The index and its two platform images.
	if len(plan.Plan.Manifests) != 3 {
		t.Fatalf("plan: %d manifests, want 3: %+v", len(plan.Plan.Manifests), plan.Plan.Manifests)
	}
	ex := dopts
	ex.PlanFile = plan.PlanFile
	dres, err := pipeline.Delete(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	if len(dres.Deleted) != 3 || len(dres.Kept)+len(dres.Failed) != 0 {
		t.Errorf("deleted %d, kept %+v, failed %+v", len(dres.Deleted), dres.Kept, dres.Failed)
	}
	if dres.TagsWithManifests == e.dst.TagDelete {
		t.Errorf("tags deleted with their manifests: %v; the registry can delete a tag alone: %v", dres.TagsWithManifests, e.dst.TagDelete)
	}
	for _, m := range plan.Plan.Manifests {
		if d := destDigest(t, e, m.Repository+"@"+m.Digest.String()); d != "" {
			t.Errorf("%s@%s still served", m.Repository, m.Digest)
		}
	}
	tags, err := e.dst.Tags(ctx, "del/tools/debug")
	if err != nil || len(tags) != 0 {
		t.Errorf("tags left on the deleted image: %v (%v)", tags, err)
	}
	// What the plan did not name stays.
	c := res.Catalogs[0]
	if d := destDigest(t, e, c.DestRepo+":"+c.Tag); d != c.Digest.String() {
		t.Errorf("catalog %s:%s serves %q after the delete, want %s", c.DestRepo, c.Tag, d, c.Digest)
	}
}

func matrixShards(t *testing.T, e *matrixEnv) {
	ctx := context.Background()
	base := e.options(t, "shards")
	po := base
	po.Workspace, po.Run.PlanOnly = location.File(t.TempDir()), true
	pres, err := pipeline.Mirror(ctx, po)
	if err != nil {
		t.Fatal(err)
	}
	planFile := workspace.Dir(pres.WorkingDir).PlanPath()
	for i := range 2 {
		o := base
		o.Workspace, o.Run.PlanFile, o.Run.Shard, o.Run.Shards = location.File(t.TempDir()), planFile, i, 2
		if _, err := pipeline.Mirror(ctx, o); err != nil {
			t.Fatalf("shard %d/2: %v", i, err)
		}
	}
	fo := base
	fo.Workspace, fo.Run.PlanFile, fo.Run.Finish = location.File(t.TempDir()), planFile, true
	res, err := pipeline.Mirror(ctx, fo)
	if err != nil {
		t.Fatalf("--finish: %v", err)
	}
	checkAtDestination(t, e, res, "shards")
}

func matrixList(t *testing.T, e *matrixEnv) {
	ctx := context.Background()
	reg := registry.New(registry.Options{AuthFile: e.auth, CertDir: e.src.CertDir})
	l, err := pipeline.ListOperators(ctx, pipeline.ListOperatorsOptions{Catalog: e.catalog, Fetch: catalogimage.FetchOptions{Registry: reg}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Packages {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"bar", "baz", "foo"}) {
		t.Errorf("packages %v, want bar, baz, foo", names)
	}
	want, err := e.src.Digest(ctx, strings.TrimPrefix(e.catalog, e.src.Host+"/"))
	if err != nil || l.Digest.String() != want {
		t.Errorf("listed catalog digest %s, the registry serves %s (%v)", l.Digest, want, err)
	}
}

func writeMatrixFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
