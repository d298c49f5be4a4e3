package pipeline

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
)

// The air gap twice: an archive of the first z-stream, then one
// --since-archive the first with the next z-stream (only what the first
// lacks: the next payload and its changed components), each loaded in turn
// on the far side with the source, the update service and the signature
// store gone; the pinned configuration of a release: run names its payload
// by digest.
func TestReleaseSinceArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 10})
	next := e.nextZStream(t, 10, 3)
	svc := e.stable415(t, next)
	channel := func(max string) string {
		return releaseConfig(t, fmt.Sprintf("    channels:\n    - name: stable-4.15\n      minVersion: 4.15.1\n      maxVersion: %s\n", max))
	}
	first, both := channel("4.15.1"), channel("4.15.2")
	opts := func(cfg string) Options {
		return Options{ConfigPath: cfg, Network: NetworkOptions{RetryTimes: 1},
			Releases: ReleaseOptions{GraphURL: svc.URL, SignatureURL: e.store.URL, SignatureKeys: e.keys}}
	}
	a1, a2 := t.TempDir(), t.TempDir()
	o := opts(first)
	o.Destination.Location = location.File(a1)
	if _, err := Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	o = opts(both)
	o.Destination.Location, o.Archive.SinceArchive = location.File(a2), location.File(a1)
	inc, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if inc.Archive == nil || !inc.Archive.Incremental {
		t.Fatalf("the second archive is not incremental: %+v", inc.Archive)
	}
	var increment int64
	for d, n := range next.Blobs {
		if _, shared := e.rel.Blobs[d]; !shared {
			increment += n
		}
	}
	if inc.BytesSent > increment+increment/10 {
		t.Errorf("the incremental archive holds %d blob bytes, want about the %d 4.15.2 does not share with 4.15.1", inc.BytesSent, increment)
	}

	e.src.Stop()
	asked, sigAsked := len(svc.Requests()), len(e.store.Requests())
	far := registrytest.Start(t)
	farWS := location.File(t.TempDir())
	for _, step := range []struct{ cfg, dir string }{{first, a1}, {both, a2}} {
		o := opts(step.cfg)
		o.Releases.GraphURL, o.Releases.SignatureURL = "", "" // the far side reads what the archive carries
		o.Archive.From, o.Workspace, o.Destination.Location = location.File(step.dir), farWS, location.Docker(far.Host()+"/far")
		res, err := Mirror(ctx, o)
		if err != nil {
			t.Fatalf("disk-to-mirror of %s: %v", step.dir, err)
		}
		if step.dir == a2 {
			checkReleaseMirrored(t, "disk-to-mirror 4.15.1 after both archives", res, far.Host()+"/far", e.rel)
			checkReleaseMirrored(t, "disk-to-mirror 4.15.2 from the incremental archive", res, far.Host()+"/far", next)
		}
	}
	if n, m := len(svc.Requests()), len(e.store.Requests()); n != asked || m != sigAsked {
		t.Errorf("disk-to-mirror asked the update service %d times and the signature store %d times", n-asked, m-sigAsked)
	}
}

// A release named directly is pinned to its digest in the pinned
// configuration, which selects the same payload again.
func TestReleasePinnedConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 4})
	o := Options{ConfigPath: releaseConfig(t, "    release: "+e.rel.Ref+"\n"), Network: NetworkOptions{RetryTimes: 1},
		Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys}}
	dst := registrytest.Start(t)
	o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), location.File(t.TempDir())
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(res.PinnedConfig)
	if err != nil {
		t.Fatalf("pinned configuration %q: %v", res.PinnedConfig, err)
	}
	if !strings.Contains(string(b), "release: "+e.rel.PayloadRef()) && !strings.Contains(string(b), e.rel.Digest.String()) {
		t.Fatalf("the pinned configuration does not pin the payload to %s:\n%s", e.rel.Digest, b)
	}
	o.ConfigPath, o.Destination.Location = res.PinnedConfig, location.Docker(dst.Host()+"/again")
	again, err := Mirror(ctx, o)
	if err != nil {
		t.Fatalf("mirroring the pinned configuration: %v", err)
	}
	checkReleaseMirrored(t, "the pinned configuration", again, dst.Host()+"/again", e.rel)
}
