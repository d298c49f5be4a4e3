package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// A destination that allows no deletes (Debian's Distribution 2.8 in its
// default configuration) behind a proxy that alters half of the first tag
// pushes on the way (re-indented JSON: valid, another digest): every tag ends on the
// right manifest, pushed again after each altered revision, and the altered
// revisions the registry kept are listed in the results, the summary and
// report.html (repository, digest, each readable at the registry by that
// digest), with the registry's garbage collection named as the way to remove
// them.
func TestNoDeleteDestinationAlteredTags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := registrytest.Start(t)
	var extra []string
	for i := range 8 {
		ref := fmt.Sprintf("%s/tools/t%d:1.0", src.Host(), i)
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: 700 + uint64(i), Layers: 1, LayerSize: 4 << 10})
		extra = append(extra, "  - name: "+ref)
	}
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(extra, "\n")+"\n")
	dst := registrytest.StartKind(t, registrytest.Distribution28NoDelete)
	tagPUT := func(r *http.Request) bool {
		return registrytest.ManifestUploads(r) && !strings.Contains(r.URL.Path, "/manifests/sha256:")
	}
	// Half of the first ten tag pushes, five in all: fewer than the attempts
	// of one push (--retry-times 5: six), so that no image can fail
	// whichever of the concurrent pushes they fall on. (At a random 50%, an
	// image fails now and then after its retries, as it should.)
	m, p := registrytest.MangleJSON, registrytest.Pass
	proxy := registrytest.NewFaultProxy(t, dst.Host, registrytest.FaultPlan{Match: tagPUT, Sequence: []registrytest.Fault{m, p, m, m, p, p, m, p, m, p}})

	o := faultOpts(cfg)
	o.Destination.Location = location.Docker(proxy.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	res, err := pipeline.Mirror(ctx, o)
	if err != nil || res.Failed != 0 {
		t.Fatalf("mirror-to-mirror into a registry without deletes, half the tag pushes altered: %v%s", err, failures(res))
	}
	if proxy.Injected()[registrytest.MangleJSON] == 0 {
		t.Fatal("no tag push was altered: the test tested nothing")
	}
	checkIndependently(t, res, proxy.Host(), dst.Host)
	// The alteration is the same re-indent each time: a manifest altered
	// twice is one revision.
	if n := len(res.AlteredManifests); n == 0 || n > proxy.Injected()[registrytest.MangleJSON] {
		t.Errorf("%d altered revisions listed, %d tag pushes altered: %+v", n, proxy.Injected()[registrytest.MangleJSON], res.AlteredManifests)
	}
	for _, a := range res.AlteredManifests {
		path := strings.TrimPrefix(a.Repository, proxy.Host()+"/")
		if _, err := dst.Digest(ctx, path+"@"+a.Digest.String()); err != nil {
			t.Errorf("the altered revision %s@%s listed is not at the registry: %v", path, a.Digest, err)
		}
		warned := false
		for _, w := range res.Warnings {
			warned = warned || (strings.Contains(w, a.Digest.String()) && strings.Contains(w, "garbage collection"))
		}
		if !warned {
			t.Errorf("no warning names %s and the registry's garbage collection: %q", a.Digest, res.Warnings)
		}
	}
	// The summary and report.html list them too, with the garbage collection.
	var sum bytes.Buffer
	res.WriteSummary(&sum)
	page, err := os.ReadFile(res.Report)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{sum.String(), string(page)} {
		if !strings.Contains(text, "registry garbage-collect --delete-untagged") {
			t.Errorf("the garbage collection is not named:\n%s", text)
		}
		for _, a := range res.AlteredManifests {
			if !strings.Contains(text, a.Repository) || !strings.Contains(text, a.Digest.String()) {
				t.Errorf("%s@%s is not listed:\n%s", a.Repository, a.Digest, text)
			}
		}
	}
	t.Logf("%d tag pushes altered, %d altered revisions kept by the registry", proxy.Injected()[registrytest.MangleJSON], len(res.AlteredManifests))
}
