package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
)

// floors runs the copy section's floor clients (workload.Push and
// PullToFile, minimal clients of what a workflow must do at least) against
// the copy section's source and fresh destinations, and makes their rows.
type floors struct {
	ctx   context.Context
	cfg   Config
	w     *workload.Workload
	o     workload.Options // w's options, for a floor run apart
	src   *Registry
	start func(name string) (*Registry, error)
	stop  func(*Registry)
	// catalog is the host the workload's catalog names ("": no catalog).
	catalog   string
	input     string
	sentRatio func(copyRun) string
}

// run measures one floor client: po says what it reads (From, FromFile:
// generated content when neither) and where it writes (ToFile, else a fresh
// registry, whose address run fills in). With Config.Self the client runs in
// a process of its own and its CPU is exact; else it runs here and its CPU
// includes the bench's counting proxies.
func (f *floors) run(name string, po workload.PushOptions) (copyRun, error) {
	var dst *Registry
	if po.ToFile == "" {
		var err error
		if dst, err = f.start("dst-floor"); err != nil {
			return copyRun{}, err
		}
		defer f.stop(dst)
		po.Registry = dst.Addr()
	}
	po.Parallel = f.cfg.FloorParallel
	var d0, s0 Counts
	var rc0 time.Duration
	if dst != nil {
		d0, rc0 = dst.Proxy.Counts(), dst.CPU()
	}
	if po.From != "" {
		s0, rc0 = f.src.Proxy.Counts(), rc0+f.src.CPU()
	}
	f.cfg.Log.Info("measuring", "what", name)
	c0, t0 := selfCPU(), time.Now()
	var apart, apartWall time.Duration // the client's CPU and wall, measured in its own process
	var err error
	switch {
	case f.cfg.Self != "":
		apart, apartWall, err = pushApart(f.ctx, f.cfg.Self, f.o, f.catalog, po)
	case po.ToFile != "":
		_, err = f.w.PullToFile(f.ctx, po)
	default:
		_, err = f.w.Push(f.ctx, po)
	}
	wall := time.Since(t0)
	if apartWall > 0 {
		wall = apartWall // the push alone, not the workload's generation before it
	}
	var ds, dd Counts
	var regCPU time.Duration
	requests := "– / –"
	if dst != nil {
		dd, regCPU = dst.Proxy.Counts().Sub(d0), dst.CPU()
		requests = fmt.Sprintf("– / %d", dd.Requests)
	}
	if po.From != "" {
		ds, regCPU = f.src.Proxy.Counts().Sub(s0), regCPU+f.src.CPU()
		requests = fmt.Sprintf("%d / %s", ds.Requests, requests[len("– / "):])
	}
	regCPU -= rc0
	cpu, harness := selfCPU()-c0, time.Duration(0)
	if apart > 0 {
		cpu, harness = apart, cpu // the harness's share: its counting proxies
	}
	r := Row{Name: name, Input: f.input, Wall: wall, CPU: cpu, RegCPU: regCPU, Pulled: ds.BytesOut, Pushed: dd.BytesIn, Counted: true,
		Blobs: fmt.Sprintf("%d (%d)", dd.BlobsCommitted, dd.Mounted), Requests: requests, Throughput: Rate(dd.UploadBytesIn, wall)}
	if po.ToFile != "" {
		fi, serr := os.Stat(po.ToFile)
		if serr == nil {
			r.Pushed = fi.Size()
			r.Throughput = Rate(fi.Size(), wall)
		}
		r.Blobs = "–"
	}
	fr := copyRun{row: r, wall: wall, blobs: dd.BlobsCommitted, upload: dd.UploadBytesIn, dstReq: dd.Requests, ok: err == nil,
		cpu: r.CPU + r.RegCPU + harness, apart: apart > 0}
	if err != nil {
		fr.row.Note = "FAILED: " + err.Error()
		return fr, fmt.Errorf("%s: %w", name, err)
	}
	how := "client CPU includes the bench's proxies"
	if fr.apart {
		how = "client CPU and wall measured in a process of its own, around the push (the workload's generation before it not counted)"
	}
	if po.ToFile != "" {
		fr.row.Note = fmt.Sprintf("pushed = the file written; %s; parallel %d; %s", breakdown(ds, dd, true, false), f.cfg.FloorParallel, how)
		return fr, nil
	}
	fr.row.Note = breakdown(ds, dd, po.From != "", true)
	fr.row.Note = fmt.Sprintf("%s; parallel %d; %s", f.sentRatio(fr), f.cfg.FloorParallel, how)
	return fr, nil
}

// diskRatio is the row of a disk workflow's wall over its floor's.
func diskRatio(name, input string, run, floor copyRun) Row {
	ratio := float64(run.wall) / float64(floor.wall)
	return Row{Name: name, Input: input, WallText: fmt.Sprintf("%.2f×", ratio), Target: "≤ 1.30×", Met: met(ratio <= 1.3),
		Note: fmt.Sprintf("wall %s / %s; CPU (client + registries + the bench's proxies) %.2f s / %.2f s (%.2f×)",
			Seconds(run.wall), Seconds(floor.wall), run.cpu.Seconds(), floor.cpu.Seconds(), run.cpu.Seconds()/floor.cpu.Seconds())}
}
