package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/workspace"
)

// shardInput is what the shard rows need from the copy section.
type shardInput struct {
	airlock, work, iscPath, input string
	// registry serves the registries (Config.Registry).
	registry string
	src      *Registry
	unique   int64
	tune     []string
	// single is the wall time of the unsharded mirror-to-mirror (0: not run).
	single time.Duration
}

// runShards measures a mirror-to-mirror plan copied by 2 shards running at
// once, as two pods on two nodes would: each shard pushes to its own registry
// process, the two sharing one storage (replicas of one registry), so that the
// blobs one shard sends and the other mounts meet. Rows: the plan, each shard
// (bytes it pushed), both together (wall), the spread of the shards' bytes
// (the partition's and the measured), bytes sent / unique, and --finish.
func runShards(ctx context.Context, in shardInput) ([]Row, error) {
	rows := []Row{heading("copy: sharded mirror-to-mirror (airlock mirror --plan-only, --plan --shard I/2 at once into two registry replicas sharing storage, --finish)")}
	root := filepath.Join(in.work, "dst-shards")
	a, err := StartRegistry(ctx, in.registry, root)
	if err != nil {
		return rows, err
	}
	defer a.Stop()
	b, err := StartRegistry(ctx, in.registry, root)
	if err != nil {
		return rows, err
	}
	defer b.Stop()
	flags := append([]string{"--src-tls-verify=false", "--dest-tls-verify=false"}, in.tune...)
	airlockMirror := func(ws string, dst *Registry, extra ...string) Command {
		args := append([]string{"mirror", "-c", in.iscPath, "--workspace", location.File(filepath.Join(in.work, ws)).String()}, extra...)
		args = append(args, flags...)
		return Command{Name: in.airlock, Args: append(args, location.Docker(dst.Addr()+"/mirror").String())}
	}

	m, err := Exec(ctx, airlockMirror("shard-plan", a, "--plan-only"))
	if err != nil || m.Exit != 0 {
		return rows, fmt.Errorf("--plan-only: %v %s", err, lastLine(m.Stderr))
	}
	planA := workspace.At(filepath.Join(in.work, "shard-plan")).PlanPath()
	rows = append(rows, Row{Name: "airlock mirror --plan-only (reads every manifest)", Input: in.input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU()})
	// The pod on the other node reaches the registry through the other replica.
	raw, err := os.ReadFile(planA)
	if err != nil {
		return rows, err
	}
	planB := filepath.Join(in.work, "shard-plan", "plan-replica-b.json")
	if err := os.WriteFile(planB, []byte(strings.ReplaceAll(string(raw), a.Addr(), b.Addr())), 0o644); err != nil {
		return rows, err
	}
	_, part, err := mirror.PartitionFile(planA, 2)
	if err != nil {
		return rows, err
	}

	regs := []*Registry{a, b}
	plans := []string{planA, planB}
	c0 := []Counts{a.Proxy.Counts(), b.Proxy.Counts()}
	rc0 := a.CPU() + b.CPU()
	ms, both, err := runTwo(ctx, func(i int) Command {
		return airlockMirror(fmt.Sprint("shard-", i), regs[i], "--plan", plans[i], "--shard", fmt.Sprintf("%d/2", i))
	})
	if err != nil {
		return rows, err
	}
	var pushed [2]int64
	var total int64
	for i := range 2 {
		d := regs[i].Proxy.Counts().Sub(c0[i])
		pushed[i] = d.UploadBytesIn
		total += d.UploadBytesIn
		sh := part.Shards[i]
		rows = append(rows, Row{Name: fmt.Sprintf("shard %d/2 → replica %c", i, 'A'+i), Input: in.input, Wall: ms[i].Wall, RSS: ms[i].MaxRSS, CPU: ms[i].CPU(),
			Pushed: d.BytesIn, Counted: true, Blobs: fmt.Sprintf("%d (%d)", d.BlobsCommitted, d.Mounted), Requests: fmt.Sprintf("– / %d", d.Requests),
			Throughput: Rate(d.UploadBytesIn, ms[i].Wall),
			Note:       fmt.Sprintf("%d images; plan says it sends %s, waits for %d blobs the other sends", len(sh.Images), Bytes(sh.Bytes), len(sh.Elsewhere))})
	}
	r := Row{Name: "2 shards at once (wall until both finished)", Input: in.input, Wall: both, RegCPU: a.CPU() + b.CPU() - rc0,
		Throughput: Rate(total, both), Note: fmt.Sprintf("groups spread over both shards: %d", part.Split)}
	if in.single > 0 {
		r.Note += fmt.Sprintf("; unsharded m2m above: %s (%.2f×)", Seconds(in.single), float64(in.single)/float64(both))
	}
	rows = append(rows, r)
	spread := func(x, y int64) float64 {
		lo, hi := min(x, y), max(x, y)
		if lo == 0 {
			return 1
		}
		return float64(hi-lo) / float64(lo)
	}
	ps := spread(part.Shards[0].Bytes, part.Shards[1].Bytes)
	rows = append(rows, Row{Name: "per-shard bytes spread, plan (max/min − 1)", Input: in.input, WallText: fmt.Sprintf("%.1f%%", 100*ps), Target: "≤ 10%", Met: met(ps <= 0.10),
		Note: fmt.Sprintf("%s / %s", Bytes(part.Shards[0].Bytes), Bytes(part.Shards[1].Bytes))})
	msp := spread(pushed[0], pushed[1])
	rows = append(rows, Row{Name: "per-shard bytes spread, measured at the replicas", Input: in.input, WallText: fmt.Sprintf("%.1f%%", 100*msp), Target: "≤ 10%", Met: met(msp <= 0.10),
		Note: fmt.Sprintf("%s / %s uploaded", Bytes(pushed[0]), Bytes(pushed[1]))})
	ratio := float64(total) / float64(in.unique)
	rows = append(rows, Row{Name: "bytes sent / unique: 2 shards together", Input: in.input, WallText: fmt.Sprintf("%.2f", ratio), Target: "1.00", Met: met(fmt.Sprintf("%.2f", ratio) == "1.00")})

	m, err = Exec(ctx, airlockMirror("shard-finish", a, "--plan", planA, "--finish"))
	if err != nil || m.Exit != 0 {
		return rows, fmt.Errorf("--finish: %v %s", err, lastLine(m.Stderr))
	}
	rows = append(rows, Row{Name: "airlock mirror --plan --finish (verify, push the catalog, cluster resources)", Input: in.input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU()})
	return rows, nil
}

// runTwo runs the commands of shards 0 and 1 at once and returns their
// measures and the wall time until both finished; an error names each shard
// that failed to run or exited non-zero.
func runTwo(ctx context.Context, cmd func(i int) Command) ([]Measure, time.Duration, error) {
	ms := make([]Measure, 2)
	errs := make([]error, 2)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms[i], errs[i] = Exec(ctx, cmd(i))
			if errs[i] == nil && ms[i].Exit != 0 {
				errs[i] = fmt.Errorf("shard %d: exit %d: %s", i, ms[i].Exit, lastLine(ms[i].Stderr))
			}
		}()
	}
	wg.Wait()
	return ms, time.Since(start), errors.Join(errs...)
}
