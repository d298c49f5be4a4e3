package pipeline_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// The releases a channel selects are read (payload, then its signature) at
// the same time, not one after the other: whichever payload manifest the
// source is asked for first is held until it was asked for the other one.
// Read one at a time, the hold runs out with the second payload never asked
// for (the run then completes: the test fails on what the gate saw, no clock
// is asserted).
func TestReleasePayloadsReadTogether(t *testing.T) {
	t.Parallel()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	var mu sync.Mutex
	asked := map[string]bool{}
	payloads := map[string]bool{} // the payloads' manifest paths, set once pushed
	var both bool
	g := startGate(t, src.Host(), func(r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if !payloads[r.URL.Path] {
			return false
		}
		asked[r.URL.Path] = true
		return true
	}, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(asked) == 2
	}, func() {
		mu.Lock()
		defer mu.Unlock()
		both = len(asked) == 2
	})
	r1 := releasetest.Push(t, g.host, releasetest.Spec{Version: "4.15.1", Components: 4, PushTo: src.Host()})
	r2 := releasetest.Push(t, g.host, releasetest.Spec{Version: "4.15.2", Previous: []string{"4.15.1"}, Components: 4, Changed: 1, PushTo: src.Host()})
	mu.Lock()
	for _, r := range []releasetest.Release{r1, r2} {
		payloads["/v2/ocp/release/manifests/"+r.Digest.String()] = true
	}
	mu.Unlock()
	key, store := signtest.NewReleaseKey(t, "rsa"), signtest.NewSignatureStore(t)
	keys := filepath.Join(t.TempDir(), "release-keys.asc")
	if err := os.WriteFile(keys, key.Armored, 0o644); err != nil {
		t.Fatal(err)
	}
	store.Put(r1.Digest, key.SignRelease(t, r1.Ref, r1.Digest))
	store.Put(r2.Digest, key.SignRelease(t, r2.Ref, r2.Digest))
	svc := cincinnatitest.New(t)
	svc.Serve("stable-4.15", releasetest.GraphJSON(t, "stable-4.15", releasetest.Node{Version: "4.15.1", Payload: r1.PayloadRef()}, releasetest.Node{Version: "4.15.2", Payload: r2.PayloadRef()}))
	cfg := filepath.Join(t.TempDir(), "isc.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  platform:\n    channels:\n    - name: stable-4.15\n      minVersion: 4.15.1\n      maxVersion: 4.15.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts(cfg)
	o.Releases = pipeline.ReleaseOptions{GraphURL: svc.URL, SignatureURL: store.URL, SignatureKeys: keys}
	o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/mirror"), location.File(t.TempDir())
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !both {
		t.Errorf("the source held one payload's manifest and was never asked for the other's (%v): the releases were read one after the other", asked)
	}
	// Two payloads and the components of both (one changed in the second).
	if want := 2 + len(r1.Components) + 1; res.Failed != 0 || res.Copy == nil || len(res.Copy.Images) != want {
		t.Errorf("%d failed, copy %+v: want %d images copied", res.Failed, res.Copy, want)
	}
}
