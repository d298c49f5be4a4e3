package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/workspace"
)

// childPlatforms lists the platforms of the index ref holds at its registry
// whose child manifests the registry has, asked with go-containerregistry.
func childPlatforms(t *testing.T, ref string) []string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range im.Manifests {
		if _, err := remote.Head(r.Context().Digest(d.Digest.String())); err == nil {
			out = append(out, d.Platform.OS+"/"+d.Platform.Architecture)
		}
	}
	return out
}

// A multi payload (an index of per-platform payloads, components indexes too)
// is mirrored whole, or with only the platforms listed (sparse indexes, to a
// registry that takes them), under the multi tag.
func TestReleaseMulti(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.16.0", Components: 6, Platforms: []string{"linux/amd64", "linux/arm64"}})
	comp := e.rel.Components["component-001"]
	_, compDigest, _ := strings.Cut(comp, "@")

	dst := registrytest.Start(t)
	o := Options{ConfigPath: releaseConfig(t, "    release: "+e.rel.Ref+"\n"), Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys}}
	o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/whole"), location.File(t.TempDir())
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	payload := dst.Host() + "/whole/openshift/release-images:4.16.0-multi"
	if got := digestAt(t, payload); got != e.rel.Digest.String() {
		t.Errorf("whole: payload %s is %q, want %s", payload, got, e.rel.Digest)
	}
	if got := childPlatforms(t, payload); strings.Join(got, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("whole: payload platforms %v", got)
	}
	if got := digestAt(t, dst.Host()+"/whole/openshift/release:4.16.0-multi-component-001"); got != compDigest {
		t.Errorf("whole: component-001 is %q, want %s", got, compDigest)
	}
	if !strings.Contains(strings.Join(res.Sources, "\n"), "release:   4.16.0 (multi)") {
		t.Errorf("summary: %q", res.Sources)
	}

	sparse := registrytest.StartKind(t, registrytest.DistributionV3Sparse)
	o.ConfigPath = releaseConfig(t, "    release: "+e.rel.Ref+"\n    platforms:\n    - os: linux\n      architecture: arm64\n")
	o.Destination.Location, o.Workspace = location.Docker(sparse.Host+"/sparse"), location.File(t.TempDir())
	if _, err := Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	payload = sparse.Host + "/sparse/openshift/release-images:4.16.0-multi"
	if got := digestAt(t, payload); got != e.rel.Digest.String() {
		t.Errorf("sparse: payload %s is %q, want %s (a sparse index keeps its digest)", payload, got, e.rel.Digest)
	}
	if got := childPlatforms(t, payload); strings.Join(got, ",") != "linux/arm64" {
		t.Errorf("sparse: payload platforms %v, want linux/arm64 only", got)
	}
	if got := childPlatforms(t, sparse.Host+"/sparse/openshift/release:4.16.0-multi-component-001"); strings.Join(got, ",") != "linux/arm64" {
		t.Errorf("sparse: component-001 platforms %v, want linux/arm64 only", got)
	}
}

// A release planned with --plan-only (graph: true), copied by a shard and
// finished by another run (which selects again and builds the graph-data
// image again, to the same digest: the release's mirror set, signature
// ConfigMaps and UpdateService are written).
func TestReleaseSharded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 8})
	dst := registrytest.Start(t)
	ubi := imagetest.MustPush(t, e.src.Host()+"/ubi9/ubi:latest", fakeimage.Spec{Seed: 9, Layers: 2, OCI: true, Platforms: []string{"linux/amd64", "linux/arm64"}})
	base := Options{ConfigPath: releaseConfig(t, "    release: "+e.rel.Ref+"\n    graph: true\n"),
		Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys, GraphDataFile: graphDataTarball, GraphBaseImage: ubi.Ref}}
	base.Destination.Location = location.Docker(dst.Host() + "/mirror")
	run := func(o Options) *Result {
		t.Helper()
		o.Workspace = location.File(t.TempDir())
		res, err := Mirror(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	po := base
	po.Run.PlanOnly = true
	planFile := workspace.Dir(run(po).WorkingDir).PlanPath()
	sh := base
	sh.Run.PlanFile, sh.Run.Shard, sh.Run.Shards = planFile, 0, 1
	run(sh)
	fin := base
	fin.Run.PlanFile, fin.Run.Finish = planFile, true
	res := run(fin)
	checkReleaseMirrored(t, "sharded", res, dst.Host()+"/mirror", e.rel)
	checkGraphImage(t, "sharded", res, dst.Host()+"/mirror")
}

// A multi payload with kubeVirtContainer: true goes through the air gap:
// mirror-to-disk archives the payload index, its components and the KubeVirt
// image of each architecture that has one (x86_64 and s390x), and
// disk-to-mirror pushes them, with the source and the signature store
// stopped, at oc-mirror's tags (-kube-virt-container-<arch>).
func TestReleaseKubeVirtMulti(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.16.0", Components: 4, KubeVirt: true, Platforms: []string{"linux/amd64", "linux/s390x"}})
	if len(e.rel.KubeVirts) != 2 {
		t.Fatalf("the multi payload has KubeVirt images %v, want x86_64 and s390x", e.rel.KubeVirts)
	}
	cfg := releaseConfig(t, "    release: "+e.rel.Ref+"\n    kubeVirtContainer: true\n")
	target := t.TempDir()
	o := Options{ConfigPath: cfg, Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys}}
	o.Destination.Location = location.File(target)
	if _, err := Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	e.src.Stop()
	sigAsked := len(e.store.Requests())
	far := registrytest.Start(t)
	o = Options{ConfigPath: cfg, Releases: ReleaseOptions{SignatureKeys: e.keys}}
	o.Archive.From, o.Workspace, o.Destination.Location = location.File(target), location.File(t.TempDir()), location.Docker(far.Host()+"/far")
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.store.Requests()); n != sigAsked {
		t.Errorf("disk-to-mirror asked the signature store %d times", n-sigAsked)
	}
	dest := far.Host() + "/far"
	if got := digestAt(t, dest+"/openshift/release-images:4.16.0-multi"); got != e.rel.Digest.String() {
		t.Errorf("payload is %q, want %s", got, e.rel.Digest)
	}
	if got := childPlatforms(t, dest+"/openshift/release-images:4.16.0-multi"); strings.Join(got, ",") != "linux/amd64,linux/s390x" {
		t.Errorf("payload platforms %v", got)
	}
	for n, ref := range e.rel.Components {
		_, d, _ := strings.Cut(ref, "@")
		if got := digestAt(t, dest+"/openshift/release:4.16.0-multi-"+n); got != d {
			t.Errorf("component %s is %q, want %s", n, got, d)
		}
	}
	for arch, ref := range e.rel.KubeVirts {
		_, d, _ := strings.Cut(ref, "@")
		tag := dest + "/openshift/release:4.16.0-multi-kube-virt-container-" + arch
		if got := digestAt(t, tag); got != d {
			t.Errorf("the KubeVirt image of %s at %s is %q, want %s", arch, tag, got, d)
		}
	}
	if !strings.Contains(strings.Join(res.Sources, "\n"), "release:   4.16.0 (multi)") || !strings.Contains(strings.Join(res.Sources, "\n"), "6 components") {
		t.Errorf("summary: %q (want the multi release with 4 components and 2 KubeVirt images)", res.Sources)
	}
}
