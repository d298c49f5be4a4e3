package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// Releases chosen from a channel: a first z-stream mirrored, then the
// channel's next one (only what it does not share is sent), a dry run, an
// archive loaded with the registry, update service and signature store
// offline, and delete.platform through the history.
func TestReleaseChannels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 150})
	next := e.nextZStream(t, 150, 12)
	svc := e.stable415(t, next)
	channel := func(min, max string) string {
		return fmt.Sprintf("    channels:\n    - name: stable-4.15\n      minVersion: %s\n      maxVersion: %s\n", min, max)
	}
	opts := func(cfg string) Options {
		return Options{ConfigPath: cfg, Network: NetworkOptions{RetryTimes: 1},
			Releases: ReleaseOptions{GraphURL: svc.URL, SignatureURL: e.store.URL, SignatureKeys: e.keys}}
	}

	dst := registrytest.Start(t)
	ws := location.File(t.TempDir())
	o := opts(releaseConfig(t, channel("4.15.1", "4.15.1")))
	o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), ws
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkReleaseMirrored(t, "first z-stream", res, dst.Host()+"/m2m", e.rel)
	checkChannelPicture(t, "first z-stream", res)
	if got := digestAt(t, dst.Host()+"/m2m/openshift/release-images:4.15.2-x86_64"); got != "" {
		t.Errorf("4.15.2 was mirrored though maxVersion is 4.15.1")
	}

	// The dry run of both says what the second z-stream adds.
	both := releaseConfig(t, channel("4.15.1", "4.15.2"))
	o = opts(both)
	o.Destination.Location, o.Workspace, o.Run.DryRun = location.Docker(dst.Host()+"/m2m"), ws, true
	res, err = Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var newBytes int64
	for d, n := range next.Blobs {
		if _, shared := e.rel.Blobs[d]; !shared {
			newBytes += n
		}
	}
	if res.DryRun == nil || res.DryRun.BytesToSend < newBytes {
		t.Errorf("dry run: %+v, want at least the %d bytes 4.15.2 does not share", res.DryRun, newBytes)
	}
	if got := digestAt(t, dst.Host()+"/m2m/openshift/release-images:4.15.2-x86_64"); got != "" {
		t.Errorf("the dry run mirrored 4.15.2")
	}

	// The second z-stream: only what it does not share with the first is sent.
	dst.Reset()
	o.Run.DryRun = false
	res, err = Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkReleaseMirrored(t, "second z-stream", res, dst.Host()+"/m2m", next)
	sent := dst.Counts().Uploaded()
	t.Logf("second z-stream: %d bytes sent for %d bytes it does not share with the first (%d unique bytes in all; %d components, %d changed)", sent, newBytes, next.UniqueBytes, len(next.Components), 12)
	if sent > newBytes+newBytes/10 {
		t.Errorf("second z-stream: %d bytes sent, want about the %d it does not share", sent, newBytes)
	}

	// Mirror-to-disk, then disk-to-mirror with everything offline.
	target := t.TempDir()
	o = opts(both)
	o.Destination.Location = location.File(target)
	if _, err := Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	e.src.Stop()
	asked, sigAsked := len(svc.Requests()), len(e.store.Requests())
	far := registrytest.Start(t)
	farWS := location.File(t.TempDir())
	o = opts(both)
	o.Releases.GraphURL, o.Releases.SignatureURL = "", ""
	o.Archive.From, o.Workspace, o.Destination.Location = location.File(target), farWS, location.Docker(far.Host()+"/far")
	res, err = Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if n, m := len(svc.Requests()), len(e.store.Requests()); n != asked || m != sigAsked {
		t.Errorf("disk-to-mirror asked the update service %d times and the signature store %d times", n-asked, m-sigAsked)
	}
	checkReleaseMirrored(t, "disk-to-mirror 4.15.1", res, far.Host()+"/far", e.rel)
	checkChannelPicture(t, "disk-to-mirror", res)
	checkReleaseMirrored(t, "disk-to-mirror 4.15.2", res, far.Host()+"/far", next)
	b, err := os.ReadFile(filepath.Join(res.WorkingDir, "cluster-resources", "release-signatures.yaml"))
	if err != nil || !strings.Contains(string(b), "sha256-"+next.Digest.Encoded()+"-1") || !strings.Contains(string(b), "sha256-"+e.rel.Digest.Encoded()+"-1") {
		t.Errorf("disk-to-mirror: the signature ConfigMaps do not hold both releases: %v", err)
	}
	h, err := ReadHistory(farWS)
	if err != nil || len(h.Runs) == 0 {
		t.Fatalf("history: %v", err)
	}
	wanted := map[string]bool{}
	for _, im := range h.Runs[len(h.Runs)-1].Images {
		for _, w := range im.WantedBy {
			if w.Kind == workspace.WantRelease {
				wanted[w.Version+"/"+w.Arch] = true
			}
		}
	}
	if !wanted["4.15.1/amd64"] || !wanted["4.15.2/amd64"] {
		t.Errorf("history wants: %v", wanted)
	}

	// delete.platform names 4.15.1: its payload and the components 4.15.2
	// does not share are planned for deletion, nothing of 4.15.2.
	del := filepath.Join(t.TempDir(), "delete.yaml")
	if err := os.WriteFile(del, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  platform:\n"+channel("4.15.1", "4.15.1")), 0o644); err != nil {
		t.Fatal(err)
	}
	dres, err := Delete(ctx, deletion.Options{Generate: true, ConfigPath: del, Workspace: farWS, Destination: location.Docker(far.Host() + "/far")})
	if err != nil {
		t.Fatal(err)
	}
	planned := map[string]bool{}
	for _, m := range dres.Plan.Manifests {
		planned[m.Digest.String()] = true
	}
	if !planned[e.rel.Digest.String()] {
		t.Errorf("the delete plan does not remove 4.15.1's payload: %+v", dres.Plan.Manifests)
	}
	if planned[next.Digest.String()] {
		t.Error("the delete plan removes 4.15.2's payload")
	}
	for n, ref := range next.Components {
		if _, d, _ := strings.Cut(ref, "@"); planned[d] {
			t.Errorf("the delete plan removes %s, which 4.15.2 still uses", n)
		}
	}
}

// checkChannelPicture checks that the run's report.html draws stable-4.15's
// update graph (graph.Draw's SVG: the versions as nodes).
func checkChannelPicture(t *testing.T, what string, res *Result) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(res.WorkingDir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i := strings.Index(page, "Update graph of stable-4.15 (amd64, ocp)")
	if i < 0 || !strings.Contains(page[i:], "<svg") || !strings.Contains(page[i:], "4.15.1") {
		t.Errorf("%s: report.html has no picture of stable-4.15's update graph", what)
	}
}
