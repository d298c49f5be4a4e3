package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestShardedDiskPartial: a sharded mirror-to-disk where one image cannot be
// read at copy time (its layer answers 404) and one cannot be resolved at
// planning. The shard holding the unreadable image finishes without it
// (ErrPartial) and its record lists it; --finish writes a partial batch
// recording both (ErrPartial, results.json); disk-to-mirror of that batch into
// Debian's Distribution 2.8 pushes the rest and names both as missing
// (ErrPartial); once both can be read, the next mirror-to-disk carries them
// (not "nothing new") and its batch loads whole. With --all-or-nothing the
// shard stays unfinished and --finish writes no archive.
func TestShardedDiskPartial(t *testing.T) {
	ctx := context.Background()
	src := registrytest.Start(t)
	var lines []string
	for i := range 4 {
		ref := fmt.Sprintf("%s/apps/good%d:1.0", src.Host(), i)
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(900 + i), BaseSeed: 9, BaseLayers: 1, Layers: 1})
	}
	bad := imagetest.MustPush(t, src.Host()+"/apps/bad:1.0", fakeimage.Spec{Seed: 950, Layers: 1})
	var failing atomic.Bool
	failing.Store(true)
	ph := proxyTo(t, src.Host(), func(r *http.Request) int {
		if failing.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+bad.Blobs[0].String()) {
			return http.StatusNotFound
		}
		return 0
	})
	for i := range 4 {
		lines = append(lines, fmt.Sprintf("  - name: %s/apps/good%d:1.0", ph, i))
	}
	lines = append(lines, "  - name: "+ph+"/apps/bad:1.0", "  - name: "+ph+"/apps/late:1.0")
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(lines, "\n")+"\n")
	failedOf := func(res *pipeline.Result) []string {
		var out []string
		for _, im := range res.Images {
			if im.Status == transfer.StatusFailed {
				out = append(out, im.Source[strings.LastIndex(im.Source, "/")+1:])
			}
		}
		slices.Sort(out)
		return out
	}

	// sharded plans and runs two shards into target; allOrNothing is
	// --all-or-nothing. It returns the shards' results and what runs --finish.
	sharded := func(target string, allOrNothing bool) ([]*pipeline.Result, []error, func() (*pipeline.Result, error)) {
		base := opts(cfg)
		base.Destination.Location = location.File(target)
		base.Archive.AllOrNothing = allOrNothing
		po := base
		po.Run.PlanOnly = true
		// apps/late cannot be planned: the plan records it (exit 2).
		if _, err := pipeline.Mirror(ctx, po); !errors.Is(err, pipeline.ErrIncomplete) {
			t.Fatalf("--plan-only: %v, want apps/late failed", err)
		} else if msg := err.Error(); strings.Contains(msg, "mirrored") || !strings.Contains(msg, "1 image(s) could not be planned") {
			t.Errorf("--plan-only with an unplannable image says %q, want how many could not be planned and no word of mirroring", msg)
		}
		planFile := workspace.At(target).PlanPath()
		var res []*pipeline.Result
		var errs []error
		for i := range 2 {
			o := base
			o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, i, 2
			r, err := pipeline.Mirror(ctx, o)
			res, errs = append(res, r), append(errs, err)
		}
		fo := base
		fo.Run.PlanFile, fo.Run.Finish = planFile, true
		return res, errs, func() (*pipeline.Result, error) { return pipeline.Mirror(ctx, fo) }
	}

	t.Run("all-or-nothing", func(t *testing.T) {
		target := t.TempDir()
		_, errs, finish := sharded(target, true)
		_, ferr := finish()
		var unfinished int
		for _, err := range errs {
			if err != nil {
				if errors.Is(err, pipeline.ErrPartial) || !strings.Contains(err.Error(), "--all-or-nothing") {
					t.Errorf("a shard with --all-or-nothing: %v", err)
				}
				unfinished++
			}
		}
		if unfinished != 1 {
			t.Errorf("%d shards failed, want the one with apps/bad: %v", unfinished, errs)
		}
		if !errors.Is(ferr, pipeline.ErrIncomplete) || errors.Is(ferr, pipeline.ErrPartial) {
			t.Errorf("--finish with an unfinished shard: %v", ferr)
		}
		if _, err := archive.Open(filepath.Join(target, "batch-0001")); err == nil {
			t.Errorf("--all-or-nothing wrote an archive")
		}
	})

	target := t.TempDir()
	shards, errs, finish := sharded(target, false)
	var partial int
	for i, err := range errs {
		switch {
		case errors.Is(err, pipeline.ErrPartial):
			partial++
			if got := failedOf(shards[i]); !slices.Equal(got, []string{"bad:1.0"}) {
				t.Errorf("shard %d failed %v, want bad:1.0", i, got)
			}
			var sum strings.Builder
			shards[i].WriteSummary(&sum)
			if !strings.Contains(sum.String(), "; partial: without 1 image that failed") || !strings.Contains(sum.String(), "apps/bad:1.0: ") {
				t.Errorf("shard %d's summary does not say it is partial and why:\n%s", i, sum.String())
			}
			rec, rerr := archive.ReadShard(filepath.Join(target, "batch-0001"), i, 2)
			if rerr != nil || rec == nil || len(rec.Failed) != 1 || !strings.Contains(rec.Failed[0].Error, "404") {
				t.Errorf("shard %d's record does not list apps/bad with its 404: %v %+v", i, rerr, rec)
			}
		case err != nil:
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	if partial != 1 {
		t.Fatalf("%d shards finished partial, want 1: %v", partial, errs)
	}
	fres, ferr := finish()
	if !errors.Is(ferr, pipeline.ErrPartial) {
		t.Fatalf("--finish: %v, want ErrPartial", ferr)
	}
	if got := failedOf(fres); !slices.Equal(got, []string{"bad:1.0", "late:1.0"}) || fres.Archive == nil || fres.Archive.Failed != 2 {
		t.Fatalf("--finish failed %v, archive %+v: want bad and late, a partial batch", got, fres.Archive)
	}
	results, err := os.ReadFile(workspace.At(target).ResultsPath())
	if err != nil || !strings.Contains(string(results), "apps/bad:1.0") {
		t.Errorf("results.json does not list apps/bad: %v", err)
	}
	ar, err := archive.Open(fres.Archive.Dir)
	if err != nil {
		t.Fatal(err)
	}
	m := ar.ArchiveManifest()
	if len(m.Images) != 4 || len(m.Failed) != 2 {
		t.Errorf("the batch holds %d images and records %d failures, want 4 and 2", len(m.Images), len(m.Failed))
	}
	_ = ar.Close()
	if _, err := archive.Verify(ctx, fres.Archive.Dir); err != nil {
		t.Errorf("the partial batch does not verify: %v", err)
	}

	// The far side: Debian's docker-registry.
	dst := registrytest.StartKind(t, registrytest.Distribution28)
	ws := t.TempDir()
	load := func(batch string) (*pipeline.Result, error) {
		o := opts(cfg)
		o.Archive.From = location.File(filepath.Join(target, batch))
		o.Destination.Location = location.Docker(dst.Host + "/mirror")
		o.Workspace = location.File(ws)
		return pipeline.Mirror(ctx, o)
	}
	lres, err := load("batch-0001")
	if !errors.Is(err, pipeline.ErrPartial) {
		t.Fatalf("disk-to-mirror of the partial batch: %v, want ErrPartial", err)
	}
	if got := failedOf(lres); !slices.Equal(got, []string{"bad:1.0", "late:1.0"}) {
		t.Errorf("disk-to-mirror names %v as missing, want bad and late", got)
	}
	for _, im := range lres.Images {
		if im.Status == transfer.StatusFailed && !strings.Contains(im.Error, "not in the archive: it failed when batch-0001") {
			t.Errorf("%s: %q does not say it failed on the connected side", im.Source, im.Error)
		}
	}

	// Both can be read now: the next mirror-to-disk carries them.
	failing.Store(false)
	imagetest.MustPush(t, src.Host()+"/apps/late:1.0", fakeimage.Spec{Seed: 960, Layers: 1})
	o := opts(cfg)
	o.Destination.Location = location.File(target)
	next, err := pipeline.Mirror(ctx, o)
	if err != nil || next.NothingNew != nil || next.Archive == nil || next.Archive.Batch != 2 {
		t.Fatalf("the next mirror-to-disk: %v, nothing new %v, archive %+v", err, next.NothingNew, next.Archive)
	}
	if lres, err = load("batch-0002"); err != nil || lres.Failed != 0 {
		t.Fatalf("loading the batch that carries them: %v%s", err, failures(lres))
	}
}
