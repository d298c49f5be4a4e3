package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// shardConfig is the e2e catalog (package foo) and additional images in two
// groups that share base layers: one big enough to be spread over shards (its
// shared layers sent by one shard, mounted by the others), one that fits a shard.
func shardConfig(t *testing.T, e *env) string {
	t.Helper()
	var extra strings.Builder
	for i := range 4 {
		// Two by two in one repository: a shard may wait for a blob in the
		// repository its own image goes to.
		ref := fmt.Sprintf("%s/apps/big%d:1.%d", e.src.Host(), i/2, i)
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(200 + i), BaseSeed: 7, BaseLayers: 3, Layers: 1, LayerSize: 8 << 10})
		fmt.Fprintf(&extra, "  - name: %s\n", ref)
	}
	for i := range 2 {
		ref := fmt.Sprintf("%s/apps/small%d:1.0", e.src.Host(), i)
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(300 + i), BaseSeed: 8, BaseLayers: 1, Layers: 1})
		fmt.Fprintf(&extra, "  - name: %s\n", ref)
	}
	cfg := fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
    packages:
    - name: foo
  additionalImages:
  - name: %s
%s`, e.seeded.Catalog, e.extra, extra.String())
	p := filepath.Join(t.TempDir(), "imageset.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShardedMirror is the acceptance test of sharding: for N = 1, 2 and 4, a
// plan made once is copied by N shard runs against a real registry; together
// they do the plan's work, each image once, and send every distinct blob
// exactly once (bytes received by the registry = the plan's unique bytes);
// --finish refuses while a shard has not finished (a killed shard), the killed
// shard run again completes, and --finish then pushes the catalog and writes the
// cluster resources.
func TestShardedMirror(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := shardConfig(t, e)
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("shards=", n), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dst := registrytest.Start(t)
			base := opts(cfg)
			base.Destination.Location = location.Docker(dst.Host() + "/mirror")
			run := func(ctx context.Context, o pipeline.Options) (*pipeline.Result, error) {
				o.Workspace = location.File(t.TempDir())
				return pipeline.Mirror(ctx, o)
			}

			po := base
			po.Run.PlanOnly = true
			planRes, err := run(ctx, po)
			if err != nil {
				t.Fatal(err)
			}
			if c := dst.Counts(); c.UploadPOST+c.ManifestPUT != 0 {
				t.Fatalf("--plan-only wrote to the destination: %+v", c)
			}
			planFile := workspace.Dir(planRes.WorkingDir).PlanPath()
			plan, part, err := mirror.PartitionFile(planFile, n)
			if err != nil {
				t.Fatal(err)
			}

			finish := base
			finish.Run.PlanFile, finish.Run.Finish = planFile, true
			shard := func(ctx context.Context, i int) (*pipeline.Result, error) {
				o := base
				o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, i, n
				return run(ctx, o)
			}

			// Every shard but one runs to the end, concurrently (shards that
			// share a spread group wait for each other's blobs). The one with
			// the most images is killed after its first image, while the others
			// run, one image at a time.
			killed := 0
			for i, sh := range part.Shards {
				if len(sh.Images) > len(part.Shards[killed].Images) {
					killed = i
				}
			}
			if len(part.Shards[killed].Images) < 2 {
				t.Fatalf("no shard has 2 images to kill one halfway: %+v", part.Shards)
			}
			results := make([]*pipeline.Result, n)
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				if i == killed {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = shard(ctx, i)
				}()
			}
			kctx, kill := context.WithCancel(ctx)
			ko := base
			ko.Run.PlanFile, ko.Run.Shard, ko.Run.Shards = planFile, killed, n
			ko.Network.ParallelImages = 1
			ko.Output.Progress = func(p pipeline.Progress) {
				if p.Stage == "copy" && p.ImagesDone > 0 {
					kill()
				}
			}
			if _, err := run(kctx, ko); !errors.Is(err, context.Canceled) {
				t.Errorf("killed shard: got %v, want it cancelled", err)
			}
			kill()
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("shard %d: %v", i, err)
				}
			}

			// The killed shard is not finished: --finish refuses and names what is missing.
			if _, err := run(ctx, finish); !errors.Is(err, pipeline.ErrIncomplete) || !strings.Contains(err.Error(), "not at the destination") {
				t.Fatalf("--finish with a shard unfinished: got %v, want it refused", err)
			}
			if c := dst.Counts(); c.ByPath["PUT manifest"] > 0 {
				for _, im := range plan.Images {
					if im.Kind == mirror.KindCatalog {
						if ok, _ := registry.New(registry.Options{}).ManifestExists(ctx, im.DestRepo, im.Digest.String(), im.Digest); ok {
							t.Errorf("the refused --finish pushed catalog %s", im.DestRepo)
						}
					}
				}
			}

			// Run again, it completes, copying only what is missing.
			results[killed], err = shard(ctx, killed)
			if err != nil {
				t.Fatalf("killed shard run again: %v", err)
			}
			if c := results[killed].Counts(); c.Present < 1 || c.Failed != 0 {
				t.Errorf("killed shard run again: %+v, want what the killed run copied found present", c)
			}

			// The union of the shards' images is the plan's shardable images, each once.
			done := map[string]int{}
			for i, r := range results {
				if r.Shard == nil || r.Shard.Index != i || r.Shard.Of != n {
					t.Errorf("shard %d result says %+v", i, r.Shard)
				}
				for _, im := range r.Plan.Images {
					done[im.DestRepo+"@"+im.Digest.String()]++
				}
			}
			checkDoneOnce(t, plan, done)

			// Each distinct blob was sent once across all shards. The kill
			// may cut an upload under way (an image starts while the one
			// before it pushes its manifest, even one image at a time): its
			// bytes reach no blob and the re-run sends that blob whole, so the
			// bytes counted are those of the uploads the registry committed.
			c := dst.Counts()
			if got := c.Uploaded() - c.Uncommitted; got != part.UniqueBytes {
				t.Errorf("registry committed %d blob bytes (%d received, %d to uploads never committed), the plan's distinct blobs are %d (%.3fx)",
					got, c.Uploaded(), c.Uncommitted, part.UniqueBytes, float64(got)/float64(part.UniqueBytes))
			}
			if n > 1 && part.Split == 0 {
				t.Errorf("the big group was not spread over %d shards", n)
			}

			// A shard alone is not a run of the history: --finish records the plan.
			// (Its working-dir is WORKSPACE/working-dir/shards/PART.)
			if h, err := pipeline.ReadHistory(location.File(filepath.Join(results[0].WorkingDir, "..", "..", ".."))); err != nil || len(h.Runs) != 0 {
				t.Errorf("a shard's history: %v, %+v", err, h)
			}
			res, err := run(ctx, finish)
			if err != nil {
				t.Fatalf("--finish after every shard: %v", err)
			}
			checkMirrored(t, res, dst)
			h, err := pipeline.ReadHistory(location.File(filepath.Dir(res.WorkingDir)))
			if err != nil || len(h.Runs) != 1 || len(h.Runs[0].Images) != len(plan.Jobs()) || !h.Runs[0].Complete {
				t.Fatalf("history after --finish: %v, %+v", err, h)
			}
			for _, im := range h.Runs[0].Images {
				if !im.Mirrored() || len(im.WantedBy) == 0 {
					t.Errorf("history after --finish: %s %s, wanted by %+v", im.Source, im.Status, im.WantedBy)
				}
			}
			if len(res.ClusterResources) == 0 {
				t.Error("--finish wrote no cluster resources")
			}
		})
	}
}

// TestShardedMirrorRefuses covers the sharding options that cannot work.
func TestShardedMirrorRefuses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := e.config(t, "    - name: foo")
	dst := registrytest.Start(t)
	base := opts(cfg)
	base.Destination.Location = location.Docker(dst.Host() + "/mirror")
	base.Workspace = location.File(t.TempDir())
	po := base
	po.Run.PlanOnly = true
	res, err := pipeline.Mirror(context.Background(), po)
	if err != nil {
		t.Fatal(err)
	}
	planFile := workspace.Dir(res.WorkingDir).PlanPath()

	other := t.TempDir()
	otherCfg := e.config(t, "    - name: bar")
	tests := []struct {
		name string
		edit func(o *pipeline.Options)
		want string
	}{
		{"shard without plan", func(o *pipeline.Options) { o.Run.Shard, o.Run.Shards = 0, 2 }, "--plan FILE"},
		{"plan without shard", func(o *pipeline.Options) { o.Run.PlanFile = planFile }, "--shard I/N"},
		{"plan-only and plan", func(o *pipeline.Options) { o.Run.PlanOnly, o.Run.PlanFile = true, planFile }, "give one of them"},
		{"index out of range", func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, 2, 2 }, "index must be 0 to 1"},
		{"other destination", func(o *pipeline.Options) {
			o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, 0, 1
			o.Destination.Location = location.Docker(dst.Host() + "/elsewhere")
		}, "was made for"},
		{"finish with another selection", func(o *pipeline.Options) {
			o.Run.PlanFile, o.Run.Finish, o.ConfigPath = planFile, true, otherCfg
		}, "changed since the plan was made"},
		{"plan of another workflow", func(o *pipeline.Options) {
			o.Run.PlanFile, o.Run.Shard, o.Run.Shards, o.Destination.Location, o.Workspace = planFile, 0, 1, location.File(other), location.Location{}
		}, "is a mirror-to-mirror plan"},
		{"finish of mirror-to-disk", func(o *pipeline.Options) {
			o.Run.PlanFile, o.Run.Finish, o.Destination.Location, o.Workspace = planFile, true, location.File(other), location.Location{}
		}, "is a mirror-to-mirror plan"},
		{"not a plan", func(o *pipeline.Options) { o.Run.PlanFile, o.Run.Shard, o.Run.Shards = cfg, 0, 1 }, "not a plan airlock wrote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.edit(&o)
			_, err := pipeline.Mirror(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestShardedDiskRefuses: --finish of a sharded mirror-to-disk refuses records
// of two shard counts, and an unsharded mirror-to-disk refuses the batch the
// shards are filling; a shard that finished, run again, writes nothing.
func TestShardedDiskRefuses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := e.config(t, "    - name: foo")
	target := t.TempDir()
	base := opts(cfg)
	base.Destination.Location = location.File(target)
	ctx := context.Background()
	po := base
	po.Run.PlanOnly = true
	if _, err := pipeline.Mirror(ctx, po); err != nil {
		t.Fatal(err)
	}
	planFile := workspace.At(target).PlanPath()
	shard := func(i, n int) (*pipeline.Result, error) {
		o := base
		o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, i, n
		return pipeline.Mirror(ctx, o)
	}
	for i := range 2 {
		if _, err := shard(i, 2); err != nil {
			t.Fatal(err)
		}
	}
	again, err := shard(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c := again.Counts(); c.Copied != 0 || c.Present == 0 || again.BytesSent != 0 {
		t.Errorf("a finished shard run again: %+v, %d bytes", c, again.BytesSent)
	}
	if _, err := pipeline.Mirror(ctx, base); err == nil || !strings.Contains(err.Error(), "holds the shards") {
		t.Errorf("an unsharded mirror-to-disk into the shards' batch: %v", err)
	}
	if _, err := shard(0, 3); err != nil {
		t.Fatal(err)
	}
	fo := base
	fo.Run.PlanFile, fo.Run.Finish = planFile, true
	if _, err := pipeline.Mirror(ctx, fo); err == nil || !strings.Contains(err.Error(), "shards of 2 and of 3") {
		t.Errorf("--finish with shards of two counts: %v", err)
	}
}
