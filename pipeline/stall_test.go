package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/pipeline"
)

// shortTimeouts stand in for the defaults (30 s, 30 s, 45 s); the binary's own
// defaults are checked by cmd/airlock's TestStalledRegistryDefaultFlags.
var shortTimeouts = registry.Timeouts{Header: time.Second, Idle: time.Second, Stall: 1500 * time.Millisecond}

// A registry that stops answering, from the start or in the middle of the copy,
// stops the run with one error naming it, with the default retries and with
// --retry-times 0; a destination answering 5xx to everything does too.
func TestStalledOrFailingRegistryStopsRun(t *testing.T) {
	// Serial: with timeouts of 1 s, a parallel neighbour can make the healthy
	// side miss one and be reported instead of the stalled one.
	srcReg := registrytest.Start(t)
	for i := 0; i < 6; i++ {
		imagetest.MustPush(t, fmt.Sprintf("%s/apps/s%d:1.0", srcReg.Host(), i), fakeimage.Spec{Seed: 700 + uint64(i), Layers: 2, LayerSize: 16 << 10})
	}
	blobGET := func(r *http.Request) bool {
		return r.Method == http.MethodGet && registrytest.PathKind(r.URL.Path) == "blob"
	}
	uploads := func(r *http.Request) bool { return registrytest.PathKind(r.URL.Path) == "upload" }
	notBase := func(r *http.Request) bool { return registrytest.PathKind(r.URL.Path) != "base" }
	both := []int{retry.DefaultTimes, 0}
	cases := []struct {
		name  string
		side  registrytest.Side
		fault registrytest.Fault
		match func(*http.Request) bool
		want  string
		times []int
	}{
		{"source never answers", registrytest.SourceSide, registrytest.Stall, registrytest.Everything, "stopped answering", both},
		{"source answers headers then stalls", registrytest.SourceSide, registrytest.StallBody, registrytest.Everything, "stopped answering", both},
		// Manifests still come, blobs do not: three blob reads in a row time out.
		{"source blob bodies stop", registrytest.SourceSide, registrytest.StallBody, blobGET, "stopped answering", both},
		{"destination never answers", registrytest.DestinationSide, registrytest.Stall, registrytest.Everything, "stopped answering", both},
		{"destination answers headers then stalls", registrytest.DestinationSide, registrytest.StallBody, registrytest.Everything, "stopped answering", both},
		{"destination uploads hang", registrytest.DestinationSide, registrytest.Stall, uploads, "stopped answering", both},
		{"destination answers 503", registrytest.DestinationSide, registrytest.Unavailable, registrytest.Everything, "503", both},
		{"destination answers 503 after /v2/", registrytest.DestinationSide, registrytest.Unavailable, notBase, "server error", both},
		{"source answers 503 after /v2/", registrytest.SourceSide, registrytest.Unavailable, notBase, "server error", both},
	}
	for _, tc := range cases {
		for _, times := range tc.times {
			t.Run(fmt.Sprintf("%s/retry-times=%d", tc.name, times), func(t *testing.T) {
				plan := registrytest.FaultPlan{Match: tc.match, Rate: 1, Kinds: []registrytest.Fault{tc.fault}}
				proxy, srcHost, dstHost := registrytest.ProxySide(t, tc.side, srcReg, registrytest.Start(t), plan)
				var lines []string
				for i := 0; i < 6; i++ {
					lines = append(lines, fmt.Sprintf("  - name: %s/apps/s%d:1.0", srcHost, i))
				}
				o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(lines, "\n")+"\n"))
				pipeline.SetRetry(&o, &retry.Policy{Times: times, Base: 5 * time.Millisecond, Max: 20 * time.Millisecond})
				pipeline.SetTimeouts(&o, shortTimeouts)
				o.Destination.Location = location.Docker(dstHost + "/mirror")
				o.Workspace = location.File(t.TempDir())
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				res, err := pipeline.Mirror(ctx, o)
				if ctx.Err() != nil {
					t.Fatal("the run did not stop by itself")
				}
				// A stopped destination stops the run; a stopped source fails its
				// images, each at once with the cause (the run goes on with the
				// images of other sources).
				msg := fmt.Sprint(err)
				if !errors.Is(err, endpoint.ErrRegistryUnreachable) && res != nil {
					msg = failures(res)
				}
				if err == nil || !strings.Contains(msg, endpoint.ErrRegistryUnreachable.Error()+": "+proxy.Host()) || !strings.Contains(msg, tc.want) {
					t.Fatalf("err = %v%s, want the %s %s reported unreachable: %q", err, failures(res), tc.side, proxy.Host(), tc.want)
				}
				if proxy.Applied()[tc.fault] == 0 {
					t.Fatal("no fault injected")
				}
				// One message, not image by image: the images not yet copied
				// are not tried one by one against the host.
				if res != nil {
					tried := 0
					for _, im := range res.Images {
						if im.Status == "failed" && !strings.HasPrefix(im.Error, "not started") && !strings.HasPrefix(im.Error, "not finished") &&
							!strings.Contains(im.Error, endpoint.ErrRegistryUnreachable.Error()) {
							tried++
						}
					}
					if tried > 4 {
						t.Errorf("%d images failed one by one: %s", tried, failures(res))
					}
				}
			})
		}
	}
}
