package kubejob_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline/kubejob"
)

// TestZeroImageOptionsVerifyTLS: the zero ImageOptions with only the
// required fields (the destination, the binary) refuse a registry with a
// self-signed certificate (plain HTTP to a host that is not loopback:
// mirror/registry's scheme guard); Insecure (--dest-tls-verify=false) lets the same push
// through. (airlock kube job talks to no registry: it reads the plan.)
func TestZeroImageOptionsVerifyTLS(t *testing.T) {
	bin := tinyBinary(t)
	for _, kind := range registrytest.UntrustedKinds {
		t.Run(kind, func(t *testing.T) {
			_, dst := registrytest.Untrusted(t, kind)
			o := kubejob.ImageOptions{Destination: location.Docker(dst + "/tools/airlock:v1"), Binary: bin}
			res, err := kubejob.Image(context.Background(), o)
			if err == nil {
				t.Fatalf("the zero options pushed to an untrusted registry: %+v", res)
			}
			if !strings.Contains(err.Error(), "--dest-tls-verify=false") {
				t.Errorf("refused for another reason than TLS verification: %v", err)
			}
			t.Logf("refused: %v", err)
			o.Insecure = true
			if _, err := kubejob.Image(context.Background(), o); err != nil {
				t.Fatalf("with Insecure: %v", err)
			}
		})
	}
}
