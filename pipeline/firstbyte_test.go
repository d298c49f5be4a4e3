package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestFirstRunSourceRequestsPerImage counts the source requests a first
// mirror-to-mirror makes for each image before and during the copy, stage by
// stage (planning, signature discovery, measuring, copying), and asserts how
// many manifest requests each image costs: the stages share what they read.
func TestFirstRunSourceRequestsPerImage(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	const n = 4
	var lines []string
	for i := 0; i < n; i++ {
		ref := fmt.Sprintf("%s/apps/img%d:1.0", src.Host(), i)
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(40 + i), Layers: 2})
		lines = append(lines, "  - name: "+ref)
	}
	cfg := filepath.Join(t.TempDir(), "imageset.yaml")
	body := "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	src.Reset()
	o := opts(cfg)
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	o.Output.Progress = func(pipeline.Progress) {}
	var mu sync.Mutex
	last := map[string]int64{}
	stage := "start"
	per := map[string]map[string]int64{}
	snap := func(next string) {
		mu.Lock()
		defer mu.Unlock()
		c := src.Counts().ByPath
		d := map[string]int64{}
		for k, v := range c {
			if v-last[k] != 0 {
				d[k] = v - last[k]
			}
		}
		per[stage] = d
		last = c
		stage = next
	}
	o.Output.Stage = snap
	if _, err := pipeline.Mirror(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	snap("")
	var stages []string
	for s := range per {
		stages = append(stages, s)
	}
	sort.Strings(stages)
	for _, s := range stages {
		t.Logf("stage %-10s %v", s, per[s])
	}
	// Per image: one manifest GET (planning resolves the tag with it; signature
	// discovery, measuring and the copy read it from the source client's
	// memo), one tag listing and one referrers request (signature discovery).
	// Before the memo: a HEAD to resolve, a GET to discover, a GET to measure.
	c := src.Counts().ByPath
	if got := c["GET manifest"] + c["HEAD manifest"]; got != n {
		t.Errorf("%d source manifest requests for %d images, want one each (%v)", got, n, c)
	}
	if got := per["measure"]["GET manifest"] + per["copy"]["GET manifest"]; got != 0 {
		t.Errorf("measuring and copying read %d manifests from the source again, want none", got)
	}
	// Blobs move while planning goes on (transfer.Prefetch): they are not
	// requests made before the copy could start.
	before := requestsBeyondBase(registrytest.Counts{ByPath: per["plan"]}) + requestsBeyondBase(registrytest.Counts{ByPath: per["measure"]})
	before -= per["plan"]["GET blob"] + per["measure"]["GET blob"]
	if before > 3*n {
		t.Errorf("%d source requests before the copy for %d images, want at most 3 each (%v)", before, n, per)
	}
	if got := c["GET blob"]; got != 3*n { // a config and two layers each, once
		t.Errorf("%d source blob GETs, want %d", got, 3*n)
	}
	for i := 0; i < n; i++ {
		if _, err := registry.New(registry.Options{}).Resolve(context.Background(), fmt.Sprintf("%s/mirror/apps/img%d:1.0", dst.Host(), i)); err != nil {
			t.Errorf("image %d not mirrored: %v", i, err)
		}
	}
}
