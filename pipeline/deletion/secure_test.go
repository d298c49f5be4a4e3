package deletion_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
)

// TestZeroOptionsVerifyTLS: the zero Options with only the required fields
// (the destination, the workspace, what to plan: the stale) refuse a registry with a
// self-signed certificate (plain HTTP to a host that is not loopback:
// mirror/registry's scheme guard); Insecure (--dest-tls-verify=false) lets the same
// command through.
func TestZeroOptionsVerifyTLS(t *testing.T) {
	for _, kind := range registrytest.UntrustedKinds {
		t.Run(kind, func(t *testing.T) {
			_, dst := registrytest.Untrusted(t, kind)
			src := registrytest.Start(t)
			a, b := src.Host()+"/apps/a:1", src.Host()+"/apps/b:1"
			imagetest.MustPush(t, a, fakeimage.Spec{Seed: 12, Layers: 1})
			imagetest.MustPush(t, b, fakeimage.Spec{Seed: 13, Layers: 1})
			cfg := filepath.Join(t.TempDir(), "isc.yaml")
			ws, dest := location.File(t.TempDir()), location.Docker(dst+"/mirror")
			// Two runs of one configuration, the second without b: b is stale.
			for _, images := range []string{"  - name: " + a + "\n  - name: " + b + "\n", "  - name: " + a + "\n"} {
				writeFile(t, cfg, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+images)
				o := pipeline.Options{ConfigPath: cfg, Workspace: ws, Destination: pipeline.DestinationOptions{Location: dest, Insecure: true}}
				if _, err := pipeline.Mirror(context.Background(), o); err != nil {
					t.Fatalf("test set-up: mirror with --dest-tls-verify=false: %v", err)
				}
			}

			do := deletion.Options{Generate: true, Stale: true, Workspace: ws, Destination: dest}
			res, err := deletion.Run(context.Background(), do)
			if err == nil {
				t.Fatalf("the zero options planned against an untrusted registry: %+v", res.Plan)
			}
			if !strings.Contains(err.Error(), "--dest-tls-verify=false") {
				t.Errorf("refused for another reason than TLS verification: %v", err)
			}
			t.Logf("refused: %v", err)
			do.Insecure = true
			if res, err := deletion.Run(context.Background(), do); err != nil || len(res.Plan.Manifests) != 1 {
				t.Fatalf("with Insecure: %v, %+v", err, res)
			}
		})
	}
}
