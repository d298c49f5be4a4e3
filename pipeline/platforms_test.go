package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
)

// Platform subsets (platforms: on an operator and an additional image) across
// the registry matrix. The source holds the e2e catalog with every image, and
// the catalog itself, a two-arch index (linux/amd64, linux/arm64); the
// configuration keeps linux/amd64. Every kind of the matrix, in its default
// configuration, checks an index's children and refuses the sparse index: the
// run finds out with one probe and stops, the fix named, before any image is
// pushed. A Distribution v3 allowing sparse indexes
// (validation.manifests.indexes.platforms: none) takes them: mirror-to-mirror,
// mirror-to-disk then disk-to-mirror, the dry run (bytes drop) and delete
// planning, all checked with go-containerregistry.
func TestPlatformSubsetMatrix(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("platform subsets across the registry matrix")
	}
	ctx := context.Background()
	src := registrytest.StartKind(t, registrytest.DistributionV3)
	sres, err := seed.Seed(ctx, seed.Options{
		Registry: src.Host, CatalogDir: e2eCatalog, CatalogRepo: "redhatgov/oc-mirror-index", CatalogTag: "v1",
		CatalogPlatforms: []string{"linux/amd64", "linux/arm64"}, MultiArchEvery: 1,
		Insecure: true, WorkDir: t.TempDir(), Remote: src.Remote(src.Push),
	})
	if err != nil {
		t.Fatal(err)
	}
	extra := src.Host + "/tools/debug:1.0"
	imagetest.MustPush(t, extra, fakeimage.Spec{Seed: 99, Layers: 2, Platforms: []string{"linux/amd64", "linux/arm64"}}, src.Remote(src.Push)...)
	for _, kind := range append(slices.Clone(registrytest.Kinds), registrytest.DistributionV3Sparse) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := &platformEnv{src: src, dst: registrytest.StartKind(t, kind), catalog: sres.Catalog, extra: extra}
			e.auth = registrytest.WriteAuthFile(t, map[string]registrytest.Credentials{src.Host: src.Pull, e.dst.Host: e.dst.Push})
			if kind == registrytest.DistributionV3Sparse {
				platformsAccepted(t, e)
			} else {
				platformsRefused(t, e)
			}
		})
	}
}

type platformEnv struct {
	src, dst       *registrytest.Target
	catalog, extra string
	auth           string
}

// options are a run's options: the e2e catalog's package foo and the extra
// image, with platforms linux/amd64 on both when subset.
func (e *platformEnv) options(t *testing.T, ns string, subset bool) pipeline.Options {
	t.Helper()
	platforms := ""
	if subset {
		platforms = "    platforms:\n    - os: linux\n      architecture: amd64\n"
	}
	p := filepath.Join(t.TempDir(), "imageset.yaml")
	writeMatrixFile(t, p, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
    packages:
    - name: foo
%s  additionalImages:
  - name: %s
%s`, e.catalog, platforms, e.extra, platforms))
	o := opts(p)
	o.AuthFile, o.Destination.CertDir = e.auth, e.dst.CertDir
	o.Destination.Location = location.Docker(e.dst.Host + "/" + ns)
	o.Workspace = location.File(t.TempDir())
	return o
}

// platformsRefused: a registry that refuses sparse indexes is found out
// before any image is pushed (one probe), and the run stops with the fix
// named, once; no image of the plan is tagged at the destination.
func platformsRefused(t *testing.T, e *platformEnv) {
	ctx := context.Background()
	res, err := pipeline.Mirror(ctx, e.options(t, "m2m", true))
	if err == nil {
		t.Fatal("a registry that checks an index's children took sparse indexes")
	}
	msg := err.Error()
	for _, want := range []string{"refuses sparse image indexes", "nothing was pushed", "remove platforms:", "validation.manifests.indexes.platforms: none"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if strings.Count(msg, "MANIFEST_BLOB_UNKNOWN") > 1 {
		t.Errorf("the registry's answer is repeated: %s", msg)
	}
	if res != nil && res.Copy != nil && res.Copy.ManifestsSent != 0 {
		t.Errorf("%d manifests pushed before the run stopped", res.Copy.ManifestsSent)
	}
	repos, err := e.dst.Repositories(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range repos {
		tags, err := e.dst.Tags(ctx, repo)
		if err == nil && len(tags) > 0 {
			t.Errorf("%s has tags %v: something was pushed", repo, tags)
		}
	}
}

func platformsAccepted(t *testing.T, e *platformEnv) {
	ctx := context.Background()
	dry := func(subset bool) int64 {
		o := e.options(t, "dry", subset)
		o.Run.DryRun = true
		res, err := pipeline.Mirror(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return res.DryRun.BytesToSend
	}
	full, sub := dry(false), dry(true)
	t.Logf("dry run: %d bytes to send for every platform, %d for linux/amd64", full, sub)
	if sub <= 0 || sub >= full {
		t.Errorf("dry run: %d bytes with the subset, %d without: want fewer", sub, full)
	}

	o := e.options(t, "m2m", true)
	res, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Copy.BytesSent != sub {
		t.Errorf("mirror-to-mirror sent %d bytes, the dry run said %d", res.Copy.BytesSent, sub)
	}
	e.checkSparse(t, res, "m2m")
	// The cluster resources map the repositories the original digests (IDMS)
	// and the extra image's tag (ITMS) are pulled from.
	mirrorSets := ""
	for _, f := range res.ClusterResources {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mirrorSets += string(b)
	}
	for _, want := range []string{"kind: ImageDigestMirrorSet", "source: " + e.src.Host + "/redhatgov", e.dst.Host + "/m2m/redhatgov",
		"kind: ImageTagMirrorSet", "source: " + e.src.Host + "/tools", e.dst.Host + "/m2m/tools"} {
		if !strings.Contains(mirrorSets, want) {
			t.Errorf("the cluster resources lack %q:\n%s", want, mirrorSets)
		}
	}

	m2d := e.options(t, "unused", true)
	m2d.Destination.Location, m2d.Workspace = location.File(t.TempDir()), location.Location{}
	ares, err := pipeline.Mirror(ctx, m2d)
	if err != nil {
		t.Fatalf("mirror-to-disk: %v", err)
	}
	if _, err := archive.Verify(ctx, ares.Archive.Dir); err != nil {
		t.Errorf("archive verify of the archive with sparse indexes: %v", err)
	}
	d2m := e.options(t, "d2m", true)
	d2m.Archive.From = location.File(ares.Archive.Dir)
	dres, err := pipeline.Mirror(ctx, d2m)
	if err != nil {
		t.Fatalf("disk-to-mirror: %v", err)
	}
	if dres.Copy.BytesSent != sub {
		t.Errorf("disk-to-mirror sent %d bytes, mirror-to-mirror %d", dres.Copy.BytesSent, sub)
	}
	e.checkSparse(t, dres, "d2m")

	// Delete planning names the index and the one platform image it carries.
	delCfg := filepath.Join(t.TempDir(), "delete-isc.yaml")
	writeMatrixFile(t, delCfg, fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  additionalImages:\n  - name: %s\n", e.extra))
	dopts := deletion.Options{Workspace: o.Workspace, Destination: o.Destination.Location, AuthFile: e.auth, DestCertDir: e.dst.CertDir, RetryTimes: 2}
	gen := dopts
	gen.Generate, gen.ConfigPath = true, delCfg
	plan, err := pipeline.Delete(ctx, gen)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Plan.Manifests) != 2 {
		t.Fatalf("delete plan: %d manifests, want the index and its linux/amd64 image: %+v", len(plan.Plan.Manifests), plan.Plan.Manifests)
	}
	ex := dopts
	ex.PlanFile = plan.PlanFile
	if dr, err := pipeline.Delete(ctx, ex); err != nil || len(dr.Deleted) != 2 || len(dr.Failed) != 0 {
		t.Fatalf("delete: %v, deleted %d, failed %+v", err, len(dr.Deleted), dr.Failed)
	}
}

// checkSparse checks with go-containerregistry that every image of the run is
// at the destination under its original digest, that linux/amd64 pulls through
// it and linux/arm64 does not (its child was left out), and that no arm64
// child is there.
func (e *platformEnv) checkSparse(t *testing.T, res *pipeline.Result, ns string) {
	t.Helper()
	indexes := 0
	for _, im := range res.Plan.Images {
		rest := strings.TrimPrefix(im.DestRepo, e.dst.Host+"/")
		if !strings.HasPrefix(rest, ns+"/") {
			t.Fatalf("%s went to %s", im.Source, im.DestRepo)
		}
		if d, err := e.dst.Digest(context.Background(), rest+":"+im.Tags[0]); err != nil || d != im.Digest.String() {
			t.Errorf("%s:%s serves %q (%v), want the original %s", im.DestRepo, im.Tags[0], d, err, im.Digest)
			continue
		}
		ref, err := e.dst.Ref(rest + "@" + im.Digest.String())
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(ref, e.dst.Remote(e.dst.Push)...)
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			continue
		}
		mf, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		indexes++
		for _, c := range mf.Manifests {
			held, err := e.dst.Digest(context.Background(), rest+"@"+c.Digest.String())
			if err != nil {
				t.Fatal(err)
			}
			if want := c.Platform.Architecture == "amd64"; (held != "") != want {
				t.Errorf("%s: child %s (%s) held %v, want %v", ref, c.Digest, c.Platform.Architecture, held != "", want)
			}
		}
		for arch, want := range map[string]bool{"amd64": true, "arm64": false} {
			img, err := remote.Image(ref, append(e.dst.Remote(e.dst.Push), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))...)
			if err == nil {
				_, err = img.ConfigFile()
			}
			if (err == nil) != want {
				t.Errorf("pull %s for linux/%s through the mirror: %v (want success %v)", ref, arch, err, want)
			}
		}
	}
	if indexes < 3 {
		t.Errorf("%d two-arch indexes checked, want the catalog, its images and the extra image", indexes)
	}
}
