package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
)

// A conditional update between two chosen releases is never dropped
// silently: the run's summary and report.html list its risk (name and URL),
// in a dry run as in a real one.
func TestReleaseRisksReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 3})
	next := e.nextZStream(t, 3, 1)
	svc := cincinnatitest.New(t)
	meta := `{"io.openshift.upgrades.graph.release.channels":"stable-4.15"}`
	svc.Serve("stable-4.15", fmt.Appendf(nil, `{"nodes":[{"version":"4.15.1","payload":%q,"metadata":%s},{"version":"4.15.2","payload":%q,"metadata":%s}],"edges":[],`+
		`"conditionalEdges":[{"edges":[{"from":"4.15.1","to":"4.15.2"}],"risks":[{"url":"https://issues.example/OCPBUGS-1","name":"AzureDiskStalls","message":"Azure clusters may stall.","matchingRules":[{"type":"Always"}]}]}]}`,
		e.rel.PayloadRef(), meta, next.PayloadRef(), meta))
	cfg := releaseConfig(t, "    channels:\n    - name: stable-4.15\n      minVersion: 4.15.1\n      maxVersion: 4.15.2\n")
	for _, dry := range []bool{true, false} {
		o := Options{ConfigPath: cfg, Network: NetworkOptions{RetryTimes: 1}, Releases: ReleaseOptions{GraphURL: svc.URL, SignatureURL: e.store.URL, SignatureKeys: e.keys}}
		o.Destination.Location, o.Workspace, o.Run.DryRun = location.Docker(registrytest.Start(t).Host()+"/m2m"), location.File(t.TempDir()), dry
		res, err := Mirror(ctx, o)
		if err != nil {
			t.Fatalf("dry run %v: %v", dry, err)
		}
		const want = "risk:      4.15.1 -> 4.15.2: AzureDiskStalls (https://issues.example/OCPBUGS-1)"
		var sum strings.Builder
		res.WriteSummary(&sum)
		if !strings.Contains(sum.String(), want) {
			t.Errorf("dry run %v: the summary does not list the risk %q:\n%s", dry, want, sum.String())
		}
		if b, err := os.ReadFile(filepath.Join(res.WorkingDir, "report.html")); err != nil || !strings.Contains(string(b), "AzureDiskStalls") {
			t.Errorf("dry run %v: report.html does not name the risk (%v)", dry, err)
		}
	}
}
