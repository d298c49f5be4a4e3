package pipeline_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestHelmRepositoryAuthAndCA: a chart repository behind HTTP basic auth,
// serving a certificate of a private CA, is read with the credentials of
// --authfile and the CA of --src-cert-dir; wrong credentials and an unknown
// CA fail the chart with what to do.
func TestHelmRepositoryAuthAndCA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := registrytest.Start(t)
	for i, ref := range workloadImages(src.Host()) {
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(700 + i), Layers: 1})
	}
	files := startChartRepo(t).files
	ca := registrytest.NewCA(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "mirror" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes the unknown-CA case refuses
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t)}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	chartHost := strings.TrimPrefix(srv.URL, "https://")
	cfg := writeCfg(t, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  helm:
    repositories:
%s`, workloadsRepo("apps", srv.URL+"/charts", "1.2.0", src.Host(), false)))
	certDir := ca.CertDir(t)
	good := registrytest.WriteAuthFile(t, map[string]registrytest.Credentials{chartHost: {Username: "mirror", Password: "s3cret"}})
	bad := registrytest.WriteAuthFile(t, map[string]registrytest.Credentials{chartHost: {Username: "mirror", Password: "wrong"}})
	run := func(authFile, certDir string) (*pipeline.Result, string, error) {
		t.Helper()
		dst := registrytest.Start(t)
		o := opts(cfg)
		o.Network.RetryTimes = 1
		o.AuthFile, o.Source.CertDir = authFile, certDir
		o.Destination, o.Workspace = dest(location.Docker(dst.Host()+"/m")), location.File(t.TempDir())
		res, err := pipeline.Mirror(ctx, o)
		return res, dst.Host() + "/m", err
	}

	res, mirrorNS, err := run(good, certDir)
	if err != nil {
		t.Fatal(err, failedImages(res))
	}
	if _, err := helmClient(t).Pull(mirrorNS + "/apps/workloads:1.2.0"); err != nil {
		t.Errorf("the chart read with credentials and the private CA is not in the mirror: %v", err)
	}

	for _, tc := range []struct {
		name, authFile, certDir string
		want                    []string
	}{
		{"wrong credentials", bad, certDir, []string{"401", "podman login", "--authfile"}},
		{"unknown CA", good, "", []string{"certificate", "--src-cert-dir", "--src-tls-verify=false"}},
	} {
		res, _, err := run(tc.authFile, tc.certDir)
		if err == nil || res == nil {
			t.Fatalf("%s: Mirror = %v, want the chart failed", tc.name, err)
		}
		msg := ""
		for _, im := range res.Images {
			if im.Source == "helm-charts.invalid/apps/workloads:1.2.0" {
				msg = im.Error
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the chart's error %q does not say %q", tc.name, msg, w)
			}
		}
	}
}
