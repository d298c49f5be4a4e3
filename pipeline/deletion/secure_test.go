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
// (the destination, the workspace, what to plan) refuse a registry with a
// self-signed certificate and a registry speaking plain HTTP on a
// non-loopback address; Insecure (--dest-tls-verify=false) lets the same
// command through.
func TestZeroOptionsVerifyTLS(t *testing.T) {
	for _, kind := range registrytest.UntrustedKinds {
		t.Run(kind, func(t *testing.T) {
			_, dst := registrytest.Untrusted(t, kind)
			src := registrytest.Start(t)
			ref := src.Host() + "/apps/app:1"
			imagetest.MustPush(t, ref, fakeimage.Spec{Seed: 12, Layers: 1})
			dir := t.TempDir()
			cfg, delCfg := filepath.Join(dir, "isc.yaml"), filepath.Join(dir, "delete-isc.yaml")
			writeFile(t, cfg, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: "+ref+"\n")
			writeFile(t, delCfg, "apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  additionalImages:\n  - name: "+ref+"\n")
			ws, dest := location.File(filepath.Join(dir, "ws")), location.Docker(dst+"/mirror")
			o := pipeline.Options{ConfigPath: cfg, Workspace: ws, Destination: pipeline.DestinationOptions{Location: dest, Insecure: true}}
			if _, err := pipeline.Mirror(context.Background(), o); err != nil {
				t.Fatalf("test set-up: mirror with --dest-tls-verify=false: %v", err)
			}

			do := deletion.Options{Generate: true, ConfigPath: delCfg, Workspace: ws, Destination: dest}
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
