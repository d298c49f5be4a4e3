package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// gateProxy forwards to a registry, holding every request until it is opened:
// a run behind it stops at its first request (the preflight), holding its
// locks.
type gateProxy struct {
	srv     *httptest.Server
	arrived chan struct{} // closed at the first request
	open    chan struct{}
	once    sync.Once
}

func newGateProxy(t *testing.T, target string) *gateProxy {
	u, _ := url.Parse("http://" + target)
	rp := httputil.NewSingleHostReverseProxy(u)
	g := &gateProxy{arrived: make(chan struct{}), open: make(chan struct{})}
	var arrive sync.Once
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrive.Do(func() { close(g.arrived) })
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { g.release(); g.srv.Close() })
	return g
}

func (g *gateProxy) host() string { u, _ := url.Parse(g.srv.URL); return u.Host }

func (g *gateProxy) release() { g.once.Do(func() { close(g.open) }) }

func (g *gateProxy) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.arrived:
	case <-time.After(2 * time.Minute):
		t.Fatal("the first run never reached the registry")
	}
}

// gatedConfig is e's configuration with the catalog read through g.
func gatedConfig(t *testing.T, e *env, g *gateProxy) string {
	t.Helper()
	b, err := os.ReadFile(e.config(t, "    - name: baz"))
	if err != nil {
		t.Fatal(err)
	}
	gated := strings.Replace(string(b), "catalog: "+e.src.Host(), "catalog: "+g.host(), 1)
	return writeCfg(t, gated)
}

// falseErrors are what two runs on one workspace used to report.
var falseErrors = []string{"has no package", "report.html.tmp", "no such file"}

// reportsIn counts the run reports kept in the working directory wd.
func reportsIn(t *testing.T, wd workspace.Dir) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(wd.ReportsDir(), "report-*.html"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// Two runs on one workspace (mirror-to-mirror) or into one target
// (mirror-to-disk), in one process: while the first holds it, the second
// refuses at once, naming the holder, and writes nothing; the first completes;
// once it ended, the next run goes ahead.
func TestConcurrentRunsRefused(t *testing.T) {
	e := setup(t)
	for _, workflow := range []string{"mirror-to-mirror", "mirror-to-disk"} {
		t.Run(workflow, func(t *testing.T) {
			ctx := context.Background()
			g := newGateProxy(t, e.src.Host())
			o := opts(gatedConfig(t, e, g))
			dir := t.TempDir()
			if workflow == "mirror-to-mirror" {
				o.Destination.Location, o.Workspace = location.Docker(registrytest.Start(t).Host()+"/mirror"), location.File(dir)
			} else {
				o.Destination.Location = location.File(dir)
			}
			type outcome struct {
				res *pipeline.Result
				err error
			}
			first := make(chan outcome, 1)
			go func() {
				res, err := pipeline.Mirror(ctx, o)
				first <- outcome{res, err}
			}()
			g.wait(t)

			start := time.Now()
			res, err := pipeline.Mirror(ctx, o)
			took := time.Since(start)
			var le *workspace.LockedError
			if !errors.As(err, &le) || res != nil {
				t.Fatalf("second run: %v, %+v; want it refused", err, res)
			}
			if took > time.Second {
				t.Errorf("the refusal took %s, want it within 1 s", took)
			}
			t.Logf("refused in %s", took)
			msg := err.Error()
			for _, want := range []string{workspace.At(dir).Path(), fmt.Sprintf("PID %d", os.Getpid()), "wait for it to finish"} {
				if !strings.Contains(msg, want) {
					t.Errorf("refusal does not say %q:\n%s", want, msg)
				}
			}
			for _, bad := range falseErrors {
				if strings.Contains(msg, bad) {
					t.Errorf("refusal says %q:\n%s", bad, msg)
				}
			}

			g.release()
			got := <-first
			if got.err != nil || got.res.Failed != 0 {
				t.Fatalf("first run: %v", got.err)
			}
			wd := workspace.At(dir)
			if n := reportsIn(t, wd); n != 1 {
				t.Errorf("%d run reports after one run and one refused, want 1", n)
			}
			if workflow == "mirror-to-disk" {
				batches, err := archive.Batches(dir)
				if err != nil || len(batches) != 1 {
					t.Fatalf("batches after one run and one refused: %+v, %v", batches, err)
				}
				if _, err := archive.Verify(ctx, got.res.Archive.Dir); err != nil {
					t.Fatal(err)
				}
			}
			// The lock went with the first run.
			again, err := pipeline.Mirror(ctx, o)
			if err != nil {
				t.Fatalf("a run after the first ended: %v", err)
			}
			if n := reportsIn(t, wd); n != 2 || again.Report != filepath.Join(wd.ReportsDir(), "report-000002.html") {
				t.Errorf("%d run reports after two runs, this one %s", n, again.Report)
			}
		})
	}
}

// The same with two airlock processes: the second exits at once with the
// first one's PID, and the first completes.
func TestConcurrentProcessesRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the airlock binary")
	}
	airlockBinary(t)
	e := setup(t)
	for _, workflow := range []string{"mirror-to-mirror", "mirror-to-disk"} {
		t.Run(workflow, func(t *testing.T) {
			g := newGateProxy(t, e.src.Host())
			dir := t.TempDir()
			args := []string{"mirror", "-c", gatedConfig(t, e, g)}
			if workflow == "mirror-to-mirror" {
				args = append(args, "--workspace", location.File(dir).String(), location.Docker(registrytest.Start(t).Host()+"/mirror").String())
			} else {
				args = append(args, location.File(dir).String())
			}
			first := startAirlock(t, args...)
			g.wait(t)
			start := time.Now()
			out, err := runAirlock(t, args...)
			took := time.Since(start)
			if err == nil {
				t.Fatalf("second process succeeded:\n%s", out)
			}
			t.Logf("second process refused in %s (process start included)", took)
			if took > 5*time.Second {
				t.Errorf("the second process took %s to refuse", took)
			}
			for _, want := range []string{fmt.Sprintf("PID %d", first.cmd.Process.Pid), "airlock mirror -c", "wait for it to finish"} {
				if !strings.Contains(out, want) {
					t.Errorf("refusal does not say %q:\n%s", want, out)
				}
			}
			for _, bad := range falseErrors {
				if strings.Contains(out, bad) {
					t.Errorf("refusal says %q:\n%s", bad, out)
				}
			}
			g.release()
			if out, err := first.wait(); err != nil {
				t.Fatalf("first process: %v\n%s", err, out)
			}
			if n := reportsIn(t, workspace.At(dir)); n != 1 {
				t.Errorf("%d run reports after one run and one refused, want 1", n)
			}
			if workflow == "mirror-to-disk" {
				if batches, err := archive.Batches(dir); err != nil || len(batches) != 1 {
					t.Fatalf("batches: %+v, %v", batches, err)
				}
			}
		})
	}
}

// Shards started in the workspace that holds the plan (its working-dir, or the
// mirror-to-disk target) run side by side, never write the plan they read, and
// --finish there completes.
func TestShardsInThePlansWorkspace(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := shardConfig(t, e)
	for _, workflow := range []string{"mirror-to-mirror", "mirror-to-disk"} {
		t.Run(workflow, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			base := opts(cfg)
			if workflow == "mirror-to-mirror" {
				base.Destination.Location, base.Workspace = location.Docker(registrytest.Start(t).Host()+"/mirror"), location.File(dir)
			} else {
				base.Destination.Location = location.File(dir)
			}
			po := base
			po.Run.PlanOnly = true
			if _, err := pipeline.Mirror(ctx, po); err != nil {
				t.Fatal(err)
			}
			planFile := workspace.At(dir).PlanPath()
			plan, err := os.ReadFile(planFile)
			if err != nil {
				t.Fatal(err)
			}
			const n = 3
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					o := base
					o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, i, n
					_, errs[i] = pipeline.Mirror(ctx, o)
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("shard %d: %v", i, err)
				}
			}
			fo := base
			fo.Run.PlanFile, fo.Run.Finish = planFile, true
			res, err := pipeline.Mirror(ctx, fo)
			if err != nil {
				t.Fatalf("--finish: %v", err)
			}
			if after, err := os.ReadFile(planFile); err != nil || string(after) != string(plan) {
				t.Errorf("the plan was rewritten by the shards or --finish (%v)", err)
			}
			if workflow == "mirror-to-disk" {
				if _, err := archive.Verify(ctx, res.Archive.Dir); err != nil {
					t.Fatal(err)
				}
				return
			}
			h, err := pipeline.ReadHistory(base.Workspace)
			if err != nil || len(h.Runs) != 1 || !h.Runs[0].Complete {
				t.Errorf("history: %v, %+v", err, h)
			}
		})
	}
}

// A refused disk-to-mirror (an archive whose ID is not its content's, a batch
// loaded out of order) pushes nothing and keeps its own report, but the last
// good run's report.html stays.
func TestRefusedRunKeepsLastReport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	target := t.TempDir()
	o := opts(e.config(t, "    - name: baz"))
	o.Destination.Location = location.File(target)
	res1, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	o2 := o // something new: a run with nothing new writes no batch
	o2.ConfigPath = e.config(t, "    - name: baz\n    - name: bar")
	res2, err := pipeline.Mirror(ctx, o2) // batch 2, builds on batch 1
	if err != nil {
		t.Fatal(err)
	}
	dst := registrytest.Start(t)
	ws := t.TempDir()
	d := opts(o.ConfigPath)
	d.Workspace, d.Destination.Location = location.File(ws), location.Docker(dst.Host()+"/airgap")
	load := func(dir string) (*pipeline.Result, error) {
		d.Archive.From = location.File(dir)
		return pipeline.Mirror(ctx, d)
	}
	if _, err := load(res1.Archive.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := load(res2.Archive.Dir); err != nil {
		t.Fatal(err)
	}
	wd := workspace.At(ws)
	good, err := os.ReadFile(wd.ReportHTMLPath())
	if err != nil {
		t.Fatal(err)
	}
	pushed := dst.Counts().ManifestPUT

	forged := t.TempDir()
	copyTree(t, res1.Archive.Dir, forged)
	other := strings.Repeat("0f", 16)
	mirrortest.ForgeArchiveID(t, forged, res1.Archive.ArchiveID, other)
	tests := []struct {
		name, dir, want string
	}{
		{"forged archive", forged, "records archive ID " + other + ", but its content makes archive ID " + res1.Archive.ArchiveID},
		{"out of order", res1.Archive.Dir, "load the batches in order"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := load(tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want it refused saying %q", err, tc.want)
			}
			if got := dst.Counts().ManifestPUT; got != pushed {
				t.Errorf("the refused run pushed %d manifests", got-pushed)
			}
			if b, err := os.ReadFile(wd.ReportHTMLPath()); err != nil || string(b) != string(good) {
				t.Errorf("report.html is no longer the last good run's (%v)", err)
			}
			want := filepath.Join(wd.ReportsDir(), fmt.Sprintf("report-%06d.html", 3+i))
			if res == nil || res.Report != want {
				t.Fatalf("the refused run's report: %+v, want %s", res, want)
			}
			if b, err := os.ReadFile(strings.TrimSuffix(want, ".html") + ".json"); err != nil || !strings.Contains(string(b), `"refused": true`) {
				t.Errorf("the refused run's report data: %v\n%s", err, b)
			}
		})
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join(from, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, en.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
