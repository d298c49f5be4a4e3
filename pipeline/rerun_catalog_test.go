package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestNoOpRerunOfACatalog mirrors a catalog shaped like the benchmarks'
// catalog-scale workload (several packages, heads only, single-platform
// images and an index) twice into the same destination, and counts what the
// second run asks. With the catalog's images pinned by digest (as Red Hat's
// catalogs pin them) the source is asked only for the catalog's manifest
// (its tag may have moved): no image costs a source request. With images named
// by tag each still costs one (the tag may have moved too). Either way the
// destination is asked at most one question per image and pushed nothing:
// pinned images, tagged there by their digests, are answered for by one tag
// listing per repository (with --check-every-image, by a HEAD each again).
// Then the destination loses one image: the next run copies it again (read
// from the source by digest and verified), and nothing else.
func TestNoOpRerunOfACatalog(t *testing.T) {
	t.Parallel()
	for _, byTag := range []bool{false, true} {
		name := map[bool]string{false: "pinned by digest", true: "named by tag"}[byTag]
		t.Run(name, func(t *testing.T) { testNoOpRerunOfACatalog(t, byTag) })
	}
}

func testNoOpRerunOfACatalog(t *testing.T, byTag bool) {
	ctx := context.Background()
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	wo, err := workload.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	wo.Packages, wo.OlderBundles, wo.TagRefs = 2, 1, byTag
	w, err := workload.New(wo)
	if err != nil {
		t.Fatal(err)
	}
	catRef, err := w.AddCatalog(src.Host())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(ctx, workload.PushOptions{Registry: src.Host(), Parallel: 4}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "imageset.yaml")
	body := fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: %s\n", catRef)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts(cfg)
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	first, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkMirrored(t, first, dst)
	var images []mirror.PlanImage // the operator images (the catalog's own are counted apart)
	for _, im := range first.Plan.Images {
		if im.Kind == mirror.KindOperator {
			images = append(images, im)
		}
	}
	if want := len(w.Tags) - 1; len(images) != want { // every workload image and bundle, not the catalog
		t.Fatalf("%d operator images planned, want %d", len(images), want)
	}

	// The no-op re-run.
	src.Reset()
	dst.Reset()
	res, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	sc, dc := src.Counts(), dst.Counts()
	t.Logf("no-op re-run: source %v, destination %v, %d images", sc.ByPath, dc.ByPath, len(res.Plan.Jobs()))
	checkMirrored(t, res, dst)
	catalogReads := int64(1) // the catalog's manifest, by tag
	wantSrc := catalogReads
	if byTag {
		wantSrc += int64(len(images)) // one manifest request each: where does the tag point now
	}
	if n := requestsBeyondBase(sc); n != wantSrc {
		t.Errorf("no-op re-run: %d source requests (%v), want %d", n, sc.ByPath, wantSrc)
	}
	if sc.BlobGET != 0 {
		t.Errorf("no-op re-run: %d source blob GETs (the catalog's layer and config are memoised), want none", sc.BlobGET)
	}
	jobs := int64(len(res.Plan.Jobs())) // the operator images and the rebuilt catalog
	if dc.ManifestHEAD+dc.ManifestGET > jobs || dc.ManifestPUT != 0 || dc.UploadPOST+dc.MountPOST+dc.BlobHEAD != 0 {
		t.Errorf("no-op re-run: destination %v, want at most one manifest request per image (%d) and nothing else per image", dc.ByPath, jobs)
	}
	// Besides them, the referrers bookkeeping (is there a referrers API: asked
	// before the copy and again when keeping referrers findable).
	if n := requestsBeyondBase(dc); n > jobs+3 {
		t.Errorf("no-op re-run: %d destination requests for %d images (%v)", n, jobs, dc.ByPath)
	}
	for _, o := range res.Images {
		if o.Status != "skipped" {
			t.Errorf("no-op re-run: %s %s, want skipped", o.Source, o.Status)
		}
	}
	if !byTag {
		// Pinned images are found by one tag listing per repository that
		// holds several of them (the first run's record says which), not by
		// a manifest request each; --check-every-image asks about each again.
		if dc.ByPath["GET tags"] == 0 || dc.ManifestHEAD+dc.ByPath["GET tags"] >= jobs {
			t.Errorf("no-op re-run: destination %v for %d images, want tag listings answering for several images each", dc.ByPath, jobs)
		}
		every := o
		every.Destination.CheckEveryImage = true
		dst.Reset()
		if res, err = pipeline.Mirror(ctx, every); err != nil {
			t.Fatal(err)
		}
		checkMirrored(t, res, dst)
		if ec := dst.Counts(); ec.ManifestHEAD < jobs || ec.ByPath["GET tags"] != 0 {
			t.Errorf("no-op re-run with --check-every-image: destination %v, want a manifest HEAD for each of the %d images and no tag listing", ec.ByPath, jobs)
		}
	}

	// The destination loses one single-platform image: it is copied again.
	var lost mirror.PlanImage
	single := map[string]bool{}
	for _, tg := range w.Tags {
		single[w.RefOf(tg, src.Host())] = len(tg.Manifest.Children) == 0
	}
	for _, im := range images {
		if single[im.Source] {
			lost = im
			break
		}
	}
	dreg := registry.New(registry.Options{})
	if gone, err := dreg.DeleteManifest(ctx, lost.DestRepo, lost.Digest); err != nil || !gone {
		t.Fatalf("delete %s@%s at the destination: %v %v", lost.DestRepo, lost.Digest, gone, err)
	}
	src.Reset()
	dst.Reset()
	res, err = pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	sc, dc = src.Counts(), dst.Counts()
	checkMirrored(t, res, dst)
	copied := 0
	for _, o := range res.Images {
		switch {
		case o.Source == lost.Source && o.Status != "copied":
			t.Errorf("the lost image %s: %s, want copied", o.Source, o.Status)
		case o.Source != lost.Source && o.Status != "skipped":
			t.Errorf("%s: %s, want skipped", o.Source, o.Status)
		}
		if o.Status == "copied" {
			copied++
		}
	}
	// The manifest is pushed once, under its tag (the digest the registry
	// reports checked); its blobs are still in the repository (a manifest
	// delete leaves them): none is sent again.
	if copied != 1 || dc.ManifestPUT != 1 || dc.BytesUploaded != 0 {
		t.Errorf("re-run after losing one image: %d copied, %d manifest PUTs, %d bytes uploaded (%v), want 1 image, 1 PUT (its tag), no byte", copied, dc.ManifestPUT, dc.BytesUploaded, dc.ByPath)
	}
	got, err := dreg.Manifest(ctx, lost.DestRepo, lost.Digest.String())
	if err != nil || got.Digest != lost.Digest {
		t.Errorf("%s@%s after the re-run: %v %v", lost.DestRepo, lost.Digest, got.Digest, err)
	}
	if !byTag {
		// The lost image is read from the source by digest, once; the others not at all.
		if n := sc.ManifestGET + sc.ManifestHEAD; n != catalogReads+1 {
			t.Errorf("re-run after losing one image: %d source manifest requests (%v), want the catalog's and the lost image's", n, sc.ByPath)
		}
	}
}
