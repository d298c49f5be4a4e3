package pipeline_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestZeroOptionsVerifyTLS: the zero Options with only the required fields
// (the configuration, the destination, the workspace) refuse a registry with
// a self-signed certificate, as a source and as the destination (plain HTTP
// to a host that is not loopback: mirror/registry's scheme guard); the Insecure
// field of that side (--src-tls-verify=false, --dest-tls-verify=false) lets
// the same run through.
func TestZeroOptionsVerifyTLS(t *testing.T) {
	t.Parallel()
	for _, side := range []string{"destination", "source"} {
		for _, kind := range registrytest.UntrustedKinds {
			t.Run(side+" "+kind, func(t *testing.T) { zeroOptionsRefuse(t, side == "source", kind) })
		}
	}
}

// zeroOptionsRefuse mirrors one image through an untrusted registry of kind,
// the source or the destination: refused by the zero options, let through by
// that side's Insecure.
func zeroOptionsRefuse(t *testing.T, source bool, kind string) {
	untrusted, host := registrytest.Untrusted(t, kind)
	trusted := registrytest.Start(t)
	src, dst := trusted.Host(), host
	if source {
		src, dst = host, trusted.Host()
		// Pushed at its loopback address, read at host.
		push := remote.WithTransport(&http.Transport{TLSClientConfig: untrusted.TLSConfig()})
		imagetest.MustPush(t, untrusted.Host()+"/apps/app:1", fakeimage.Spec{Seed: 11, Layers: 1}, push)
	} else {
		imagetest.MustPush(t, src+"/apps/app:1", fakeimage.Spec{Seed: 11, Layers: 1})
	}
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: "+src+"/apps/app:1\n")
	o := pipeline.Options{
		ConfigPath:  cfg,
		Workspace:   location.File(t.TempDir()),
		Destination: pipeline.DestinationOptions{Location: location.Docker(dst + "/mirror")},
	}
	res, err := pipeline.Mirror(context.Background(), o)
	if err == nil {
		t.Fatalf("the zero options mirrored through an untrusted registry: %+v", res)
	}
	why := refusal(err, res)
	if !strings.Contains(why, "tls-verify=false") {
		t.Errorf("refused for another reason than TLS verification: %s", why)
	}
	t.Logf("refused: %s", why)
	if source {
		o.Source.Insecure = true
	} else {
		o.Destination.Insecure = true
	}
	o.Workspace = location.File(t.TempDir())
	if res, err := pipeline.Mirror(context.Background(), o); err != nil || res.Failed != 0 {
		t.Fatalf("with Insecure: %v (%d failed)", err, failed(res))
	}
}

// refusal is what a refused run said: its error, and each failed image's.
func refusal(err error, res *pipeline.Result) string {
	why := err.Error()
	if res != nil {
		for _, im := range res.Images {
			why += "\n" + im.Error
		}
	}
	return why
}

func failed(res *pipeline.Result) int {
	if res == nil {
		return -1
	}
	return res.Failed
}
