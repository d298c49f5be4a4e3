package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// helmWorkflowConfig mirrors the workloads chart of repo's /charts and a
// local chart; with more, the required chart too (rendered with an image of
// src's).
func helmWorkflowConfig(t *testing.T, repo *chartRepo, src, local string, more bool) string {
	t.Helper()
	extra := ""
	if more {
		extra = fmt.Sprintf("      - name: required\n        values: {image: {repository: %s/tools/extra}}\n", src)
	}
	return writeCfg(t, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  blockedImages:
  - name: ^(quay\.io|ghcr\.io|docker\.io|registry\.k8s\.io)/
  helm:
    repositories:
%s%s    local:
    - name: test-mirror-helm
      path: %s
`, workloadsRepo("apps", repo.srv.URL+"/charts", "1.2.0", src, true), extra, local))
}

// TestHelmWorkflows: charts go through the dry run (the bytes it says are
// the bytes the run sends), a sharded mirror (--plan-only, shards,
// --finish), an incremental archive (--since-archive) loaded into the mirror
// the first archive filled, and delete (delete.helm, planned from the
// history with delete --generate, then executed).
func TestHelmWorkflows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := registrytest.Start(t)
	host := src.Host()
	for i, ref := range append(workloadImages(host), host+"/tools/extra:1.0") {
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(500 + i), Layers: 1})
	}
	repo := startChartRepo(t)
	local := filepath.Join(t.TempDir(), "test-mirror-helm-0.3.0.tgz")
	if err := os.WriteFile(local, repo.files["/charts/test-mirror-helm-0.3.0.tgz"], 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := helmWorkflowConfig(t, repo, host, local, false)
	hc := helmClient(t)
	pulls := func(what, ref string, want bool) {
		t.Helper()
		if _, err := hc.Pull(ref); (err == nil) != want {
			t.Errorf("%s: helm pull oci://%s: %v (want it there: %v)", what, ref, err, want)
		}
	}

	// Dry run, then the run: the bytes the dry run says are the bytes sent.
	dst := registrytest.Start(t)
	o := opts(cfg)
	o.Destination, o.Workspace = dest(location.Docker(dst.Host()+"/m")), location.File(t.TempDir())
	o.Run.DryRun = true
	dry, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err, failedImages(dry))
	}
	chartJobs := 0
	for _, j := range dry.DryRun.Missing {
		if strings.Contains(j.Dest, "/apps/workloads") || strings.Contains(j.Dest, "/local/test-mirror-helm") {
			chartJobs++
		}
	}
	if chartJobs != 2 || dry.DryRun.BytesToSend == 0 {
		t.Fatalf("dry run: %d chart artifacts missing, %d bytes to send; want both charts and their bytes", chartJobs, dry.DryRun.BytesToSend)
	}
	if c := dst.Counts(); c.ManifestPUT+c.UploadPOST != 0 {
		t.Fatalf("the dry run wrote to the destination: %+v", c)
	}
	o.Run.DryRun = false
	var logs bytes.Buffer
	o.Output.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err, failedImages(res))
	}
	if strings.Contains(logs.String(), "registry helm-charts.invalid") {
		t.Errorf("the charts' artifacts are built locally, yet a registry was probed for them:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "registry quay.io") {
		t.Errorf("the chart's quay.io images are blocked, yet quay.io was probed:\n%s", logs.String())
	}
	if res.BytesSent != dry.DryRun.BytesToSend {
		t.Errorf("the dry run said %d bytes, the run sent %d", dry.DryRun.BytesToSend, res.BytesSent)
	}
	pulls("mirror-to-mirror", dst.Host()+"/m/apps/workloads:1.2.0", true)

	// Sharded: --plan-only, two shards, --finish.
	sharded := registrytest.Start(t)
	o = opts(cfg)
	o.Destination, o.Workspace = dest(location.Docker(sharded.Host()+"/s")), location.File(t.TempDir())
	o.Run.PlanOnly = true
	planRes, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkChartIndexes(t, "--plan-only", planRes.WorkingDir, map[string][]string{"apps": {"workloads 1.2.0"}, "local": {"test-mirror-helm 0.3.0"}})
	o.Run.PlanOnly, o.Run.PlanFile = false, workspace.Dir(planRes.WorkingDir).PlanPath()
	for i := range 2 {
		o.Run.Shard, o.Run.Shards = i, 2
		if r, err := pipeline.Mirror(ctx, o); err != nil {
			t.Fatalf("shard %d: %v %v", i, err, failedImages(r))
		}
	}
	o.Run.Shard, o.Run.Shards, o.Run.Finish = 0, 0, true
	fin, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatalf("--finish: %v", err)
	}
	// The --finish report has the Helm charts section: both charts, each
	// with its artifact in the mirror and the images it names.
	var rep struct {
		Charts []struct {
			Chart, Artifact, Status string
			Images                  []struct{ Image, Status string }
		}
	}
	if b, err := os.ReadFile(workspace.Dir(fin.WorkingDir).ReportDataPath()); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("--finish report.json: %v", err)
	}
	if len(rep.Charts) != 2 {
		t.Fatalf("--finish report: %d charts, want 2: %+v", len(rep.Charts), rep.Charts)
	}
	for _, c := range rep.Charts {
		if !strings.HasPrefix(c.Artifact, sharded.Host()+"/s/") || c.Status == "failed" || len(c.Images) == 0 {
			t.Errorf("--finish report: chart %s: artifact %q, status %q, %d images; want it in the mirror with its images", c.Chart, c.Artifact, c.Status, len(c.Images))
		}
	}
	pulls("sharded", sharded.Host()+"/s/apps/workloads:1.2.0", true)
	pulls("sharded", sharded.Host()+"/s/local/test-mirror-helm:0.3.0", true)

	// The air gap, twice: a full archive, then one --since-archive the first
	// with one chart more, loaded into the mirror the first one filled.
	first, second := t.TempDir(), t.TempDir()
	o = opts(cfg)
	o.Destination = dest(location.File(first))
	if _, err := pipeline.Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	more := helmWorkflowConfig(t, repo, host, local, true)
	o = opts(more)
	o.Destination = dest(location.File(second))
	o.Archive.SinceArchive = location.File(first)
	inc, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err, failedImages(inc))
	}
	if inc.Archive == nil || !inc.Archive.Incremental {
		t.Fatalf("the second archive is not incremental: %+v", inc.Archive)
	}
	far := registrytest.Start(t)
	farWS := location.File(t.TempDir())
	load := func(cfg, archiveDir string) *pipeline.Result {
		t.Helper()
		o := opts(cfg)
		o.Archive.From, o.Workspace, o.Destination = location.File(archiveDir), farWS, dest(location.Docker(far.Host()+"/far"))
		res, err := pipeline.Mirror(ctx, o)
		if err != nil {
			t.Fatal(err, failedImages(res))
		}
		return res
	}
	load(cfg, first)
	pulls("before the incremental archive", far.Host()+"/far/apps/required:0.1.0", false)
	res = load(more, second)
	pulls("incremental archive", far.Host()+"/far/apps/required:0.1.0", true)
	pulls("incremental archive", far.Host()+"/far/apps/workloads:1.2.0", true)
	checkChartIndexes(t, "incremental archive", res.WorkingDir, map[string][]string{
		"apps": {"workloads 1.2.0", "required 0.1.0"}, "local": {"test-mirror-helm 0.3.0"},
	})

	// Delete the workloads chart (delete.helm), from the history of the far
	// side: its artifact and images go, the other charts stay.
	del := writeCfg(t, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: DeleteImageSetConfiguration
delete:
  helm:
    repositories:
    - name: apps
      url: %s/charts
      charts:
      - name: workloads
        version: 1.2.0
`, repo.srv.URL))
	plan, err := pipeline.Delete(ctx, deletion.Options{Generate: true, ConfigPath: del, Workspace: farWS, Destination: location.Docker(far.Host() + "/far")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(plan.Plan.Manifests)
	for _, want := range []string{"/far/apps/workloads", "/far/app/cron", "/far/sidecar/second"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the delete plan does not name %s: %s", want, b)
		}
	}
	for _, keep := range []string{"required", "test-mirror-helm", "tools/extra"} {
		if strings.Contains(string(b), keep) {
			t.Errorf("the delete plan names %s, which delete.helm does not: %s", keep, b)
		}
	}
	if _, err := pipeline.Delete(ctx, deletion.Options{PlanFile: plan.PlanFile, Destination: location.Docker(far.Host() + "/far")}); err != nil {
		t.Fatal(err)
	}
	pulls("after delete", far.Host()+"/far/apps/workloads:1.2.0", false)
	pulls("after delete", far.Host()+"/far/apps/required:0.1.0", true)
	pulls("after delete", far.Host()+"/far/local/test-mirror-helm:0.3.0", true)
}
