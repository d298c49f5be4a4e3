package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// The graph-data image is a kind of its own in the results and the
// history, and deleting the release it was mirrored with keeps it: only
// delete.platform.graph: true deletes it, as oc-mirror's delete does.
func TestReleaseGraphImageKind(t *testing.T) {
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 3})
	base := imagetest.MustPush(t, e.src.Host()+"/ubi9/ubi:latest", fakeimage.Spec{Seed: 9, Layers: 1, OCI: true, Platforms: []string{"linux/amd64", "linux/arm64"}})
	dst := registrytest.Start(t)
	ws := location.File(t.TempDir())
	o := Options{ConfigPath: releaseConfig(t, "    release: "+e.rel.Ref+"\n    graph: true\n"), Network: NetworkOptions{RetryTimes: 1},
		Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys, GraphDataFile: graphDataTarball, GraphBaseImage: base.Ref}}
	o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), ws
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	graphDigest := checkGraphImage(t, "mirror-to-mirror", res, dst.Host()+"/m2m")
	kinds := map[string]string{}
	for _, im := range res.Images {
		kinds[im.Digest] = string(im.Kind)
	}
	if kinds[graphDigest] != workspace.WantGraphImage || kinds[e.rel.Digest.String()] != string(releaseKind) {
		t.Errorf("results: the graph-data image is of kind %q, the payload %q; want %q and %q", kinds[graphDigest], kinds[e.rel.Digest.String()], workspace.WantGraphImage, releaseKind)
	}
	h, err := ReadHistory(ws)
	if err != nil || len(h.Runs) != 1 {
		t.Fatalf("history: %v", err)
	}
	var wants []workspace.Want
	for _, im := range h.Runs[0].Images {
		if im.Digest.String() == graphDigest {
			wants = im.WantedBy
		}
	}
	if len(wants) != 1 || wants[0].Kind != workspace.WantGraphImage || wants[0].String() != "the graph-data image (mirror.platform.graph)" {
		t.Errorf("history: the graph-data image is wanted by %+v, want the graph-image kind alone", wants)
	}

	planned := func(stanza string) map[string]bool {
		t.Helper()
		del := filepath.Join(t.TempDir(), "delete.yaml")
		if err := os.WriteFile(del, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  platform:\n"+stanza), 0o644); err != nil {
			t.Fatal(err)
		}
		dres, err := Delete(ctx, deletion.Options{Generate: true, ConfigPath: del, Workspace: ws, Destination: location.Docker(dst.Host() + "/m2m")})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, m := range dres.Plan.Manifests {
			out[m.Digest.String()] = true
		}
		return out
	}
	if p := planned("    release: " + e.rel.Ref + "\n"); !p[e.rel.Digest.String()] || p[graphDigest] {
		t.Errorf("deleting the release: payload planned %v, graph-data image planned %v; want true, false", p[e.rel.Digest.String()], p[graphDigest])
	}
	if p := planned("    release: " + e.rel.Ref + "\n    graph: true\n"); !p[e.rel.Digest.String()] || !p[graphDigest] {
		t.Errorf("deleting the release with graph: true: payload planned %v, graph-data image planned %v; want both", p[e.rel.Digest.String()], p[graphDigest])
	}
}
