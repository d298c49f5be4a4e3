package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestSummaryAlteredAndResumed: the summary names the bytes resumed from an
// interrupted run on its blobs line, and every altered manifest revision a
// destination keeps (repository and digest) with the registry's garbage
// collection, for both workflows that send blobs.
func TestSummaryAlteredAndResumed(t *testing.T) {
	altered := []registry.AlteredManifest{
		{Repository: "mirror.example.com/ns/app", Digest: digest.FromString("altered one")},
		{Repository: "mirror.example.com/ns/tool", Digest: digest.FromString("altered two")},
	}
	var out strings.Builder
	for _, res := range []*pipeline.Result{
		{Workflow: mirror.MirrorToMirror, Copy: &transfer.Report{}, BlobsSent: 3, BytesSent: 30 << 20, BytesResumed: 12 << 20, ManifestsSent: 2, AlteredManifests: altered},
		{Workflow: mirror.MirrorToDisk, Copy: &transfer.Report{}, BlobsSent: 3, BytesSent: 30 << 20, BytesResumed: 29 << 20},
		{Workflow: mirror.MirrorToMirror, Copy: &transfer.Report{}, BlobsSent: 3, BytesSent: 30 << 20, ManifestsSent: 2},
	} {
		var b bytes.Buffer
		res.WriteSummary(&b)
		out.WriteString(b.String())
	}
	checkGolden(t, "altered-and-resumed", out.String())
}

// TestReportBytesResumed: a mirror-to-disk interrupted while it fetches a
// 4 MiB layer from Debian's docker-registry is run again: the summary's blobs
// line and report.html say how much of what was fetched was resumed, not
// fetched again, as results.json does.
func TestReportBytesResumed(t *testing.T) {
	src := registrytest.StartKind(t, registrytest.Distribution28)
	const size = 4 << 20
	big := imagetest.MustPush(t, src.Host+"/apps/big:1.0", fakeimage.Spec{Seed: 990, Layers: 1, LayerSize: size})
	layer := big.Blobs[len(big.Blobs)-1].String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first GET of the layer is cut after 1 MiB and the run interrupted.
	var cut atomic.Bool
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: src.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+layer) || r.Header.Get("Range") != "" || !cut.CompareAndSwap(false, true) {
			rp.ServeHTTP(w, r)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "http://"+src.Host+r.URL.Path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.CopyN(w, resp.Body, 1<<20)
		w.(http.Flusher).Flush()
		time.Sleep(200 * time.Millisecond) // the client stages what it read
		cancel()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	front := strings.TrimPrefix(srv.URL, "http://")
	cfg := writeCfg(t, fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: %s/apps/big:1.0\n", front))
	o := opts(cfg)
	o.Destination.Location = location.File(t.TempDir())
	if _, err := pipeline.Mirror(ctx, o); err == nil {
		t.Fatal("the interrupted run succeeded")
	}
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.BytesResumed <= 0 || res.BytesResumed > 1<<20 {
		t.Fatalf("bytesResumed %d, want the part fetched before the interrupt (at most 1 MiB)", res.BytesResumed)
	}
	var sum bytes.Buffer
	res.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "resumed from where an interrupted run stopped, not fetched again") {
		t.Errorf("the summary does not say what was resumed:\n%s", sum.String())
	}
	page, err := os.ReadFile(res.Report)
	if err != nil || !strings.Contains(string(page), "resumed from an interrupted run, not fetched again") {
		t.Errorf("report.html does not say what was resumed: %v", err)
	}
}
