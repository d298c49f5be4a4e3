package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/pipeline"
)

// matrixRelease: a release named by reference, with graph: true, pushed to
// the kind's source with its credentials; mirror-to-mirror, then the air gap
// (mirror-to-disk, disk-to-mirror). The payload, each component and the
// graph-data image must be at the destination by digest at oc-mirror's
// tags, and the UpdateService must name the graph-data image by the digest
// the registry serves.
func matrixRelease(t *testing.T, e *matrixEnv) {
	ctx := context.Background()
	push := e.src.Remote(e.src.Push)
	rel := releasetest.Push(t, e.src.Host, releasetest.Spec{Version: "4.15.1", Components: 20, Remote: push})
	base := imagetest.MustPush(t, e.src.Host+"/ubi9/ubi:latest", fakeimage.Spec{Seed: 5, Layers: 2, OCI: true, Platforms: []string{"linux/amd64", "linux/arm64"}}, push...)
	key := signtest.NewReleaseKey(t, "rsa")
	store := signtest.NewSignatureStore(t)
	store.Put(rel.Digest, key.SignRelease(t, rel.Ref, rel.Digest))
	keys := filepath.Join(t.TempDir(), "release-keys.asc")
	if err := os.WriteFile(keys, key.Armored, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "isc.yaml")
	writeMatrixFile(t, cfg, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  platform:\n    release: "+rel.Ref+"\n    graph: true\n")
	options := func() pipeline.Options {
		o := opts(cfg)
		o.AuthFile, o.Source.CertDir, o.Destination.CertDir = e.auth, e.src.CertDir, e.dst.CertDir
		o.Releases = pipeline.ReleaseOptions{SignatureURL: store.URL, SignatureKeys: keys, GraphDataFile: "../release/graphimage/testdata/graph-data.tar.gz", GraphBaseImage: base.Ref}
		return o
	}

	o := options()
	o.Destination.Location, o.Workspace = location.Docker(e.dst.Host+"/rel-m2m"), location.File(t.TempDir())
	res, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	m2m := checkReleaseAt(t, e, res, "rel-m2m", rel)

	archive := t.TempDir()
	o = options()
	o.Destination.Location = location.File(archive)
	if _, err := pipeline.Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	o = options()
	o.Releases = pipeline.ReleaseOptions{SignatureKeys: keys}
	o.Archive.From, o.Workspace, o.Destination.Location = location.File(archive), location.File(t.TempDir()), location.Docker(e.dst.Host+"/rel-d2m")
	res, err = pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if d2m := checkReleaseAt(t, e, res, "rel-d2m", rel); d2m != m2m {
		t.Errorf("the graph-data image is %s through the air gap, %s mirror-to-mirror", d2m, m2m)
	}
}

// checkReleaseAt checks rel and the graph-data image under ns at e.dst and
// returns the graph-data image's digest.
func checkReleaseAt(t *testing.T, e *matrixEnv, res *pipeline.Result, ns string, rel releasetest.Release) string {
	t.Helper()
	dest := e.dst.Host + "/" + ns
	if d := destDigest(t, e, dest+"/openshift/release-images:4.15.1-x86_64"); d != rel.Digest.String() {
		t.Errorf("%s: the payload is %q, want %s", ns, d, rel.Digest)
	}
	for n, ref := range rel.Components {
		_, want, _ := strings.Cut(ref, "@")
		if d := destDigest(t, e, dest+"/openshift/release:4.15.1-x86_64-"+n); d != want {
			t.Errorf("%s: component %s is %q, want %s", ns, n, d, want)
		}
	}
	graph := destDigest(t, e, dest+"/openshift/graph-image:latest")
	if graph == "" {
		t.Fatalf("%s: no graph-data image", ns)
	}
	b, err := os.ReadFile(filepath.Join(res.WorkingDir, "cluster-resources", manifests.UpdateServiceFile))
	if err != nil || !strings.Contains(string(b), "graphDataImage: "+dest+"/openshift/graph-image@"+graph) {
		t.Errorf("%s: the UpdateService does not name the graph-data image %s by digest (%v):\n%s", ns, graph, err, b)
	}
	return graph
}
