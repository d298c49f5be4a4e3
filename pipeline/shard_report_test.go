package pipeline_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestShardedDiskCarriesReport: the batch --finish assembles from shards
// carries the per-catalog report view as an unsharded batch does, so the
// report of its disk-to-mirror (into Debian's docker-registry) shows per
// package what was kept and why, not the package names alone.
func TestShardedDiskCarriesReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	cfg := e.config(t, "    - name: foo")
	target := t.TempDir()
	base := opts(cfg)
	base.Destination.Location = location.File(target)
	po := base
	po.Run.PlanOnly = true
	if _, err := pipeline.Mirror(ctx, po); err != nil {
		t.Fatal(err)
	}
	planFile := workspace.At(target).PlanPath()
	for i := range 2 {
		o := base
		o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, i, 2
		if _, err := pipeline.Mirror(ctx, o); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	fo := base
	fo.Run.PlanFile, fo.Run.Finish = planFile, true
	fres, err := pipeline.Mirror(ctx, fo)
	if err != nil {
		t.Fatal(err)
	}
	dst := registrytest.StartKind(t, registrytest.Distribution28)
	lo := opts(cfg)
	lo.Archive.From = location.File(fres.Archive.Dir)
	lo.Destination.Location = location.Docker(dst.Host + "/mirror")
	lo.Workspace = location.File(t.TempDir())
	res, err := pipeline.Mirror(ctx, lo)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(res.Report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="pkg-0-foo"`, "bundle(s) kept, and why"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("disk-to-mirror's report of a sharded batch does not show %q", want)
		}
	}
}
