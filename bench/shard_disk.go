package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/workspace"
)

// runDiskShards measures a mirror-to-disk plan written by 2 shards running at
// once into one target (two bastions filling one archive on shared storage),
// then --finish, which writes the catalog and the manifests and turns the
// shards' chunks into the archive's (renames, no blob copied). Rows: the plan,
// each shard (the blob bytes its chunks hold), both together (wall), the
// spread of the shards' bytes, bytes written / unique, --finish, and the
// archive verified. single is the unsharded mirror-to-disk's wall (0: not run).
func runDiskShards(ctx context.Context, in shardInput, single time.Duration) ([]Row, error) {
	rows := []Row{heading("copy: sharded mirror-to-disk (airlock mirror --plan-only, --plan --shard I/2 at once into one target, --finish)")}
	target := filepath.Join(in.work, "m2d-shards")
	flags := append([]string{"--src-tls-verify=false"}, in.tune...)
	airlockMirror := func(extra ...string) Command {
		args := append(append([]string{"mirror", "-c", in.iscPath}, extra...), flags...)
		return Command{Name: in.airlock, Args: append(args, location.File(target).String())}
	}
	m, err := Exec(ctx, airlockMirror("--plan-only"))
	if err != nil || m.Exit != 0 {
		return rows, fmt.Errorf("--plan-only: %v %s", err, lastLine(m.Stderr))
	}
	plan := workspace.At(target).PlanPath()
	rows = append(rows, Row{Name: "airlock mirror --plan-only file:// (reads every manifest)", Input: in.input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU()})
	_, part, err := mirror.PartitionFile(plan, 2)
	if err != nil {
		return rows, err
	}
	ms, both, err := runTwo(ctx, func(i int) Command {
		return airlockMirror("--plan", plan, "--shard", fmt.Sprintf("%d/2", i))
	})
	if err != nil {
		return rows, err
	}
	batch := filepath.Join(target, archive.BatchName(1))
	shards, err := archive.ReadShards(batch)
	if err != nil || len(shards.Done) != 2 {
		return rows, fmt.Errorf("shard records in %s: %v (%d)", batch, err, len(shards.Done))
	}
	var written [2]int64
	for i, rec := range shards.Done {
		written[i] = rec.BlobBytes()
		sh := part.Shards[i]
		rows = append(rows, Row{Name: fmt.Sprintf("shard %d/2 → its own chunks", i), Input: in.input, Wall: ms[i].Wall, RSS: ms[i].MaxRSS, CPU: ms[i].CPU(),
			Pushed: written[i], Counted: true, Throughput: Rate(written[i], ms[i].Wall),
			Note: fmt.Sprintf("%d images, %d chunk(s), %d blobs; plan says it writes %s, refers to %d blobs the other writes", len(sh.Images), len(rec.Chunks), len(rec.Blobs), Bytes(sh.Bytes), len(sh.Elsewhere))})
	}
	r := Row{Name: "2 shards at once (wall until both finished)", Input: in.input, Wall: both, Throughput: Rate(written[0]+written[1], both)}
	if single > 0 {
		r.Note = fmt.Sprintf("unsharded m2d above: %s (%.2f×)", Seconds(single), float64(single)/float64(both))
	}
	rows = append(rows, r)
	lo, hi := min(written[0], written[1]), max(written[0], written[1])
	spread := 1.0
	if lo > 0 {
		spread = float64(hi-lo) / float64(lo)
	}
	rows = append(rows, Row{Name: "per-shard bytes spread, written (max/min − 1)", Input: in.input, WallText: fmt.Sprintf("%.1f%%", 100*spread), Target: "≤ 10%", Met: met(spread <= 0.10),
		Note: fmt.Sprintf("%s / %s", Bytes(written[0]), Bytes(written[1]))})
	ratio := float64(written[0]+written[1]) / float64(in.unique)
	rows = append(rows, Row{Name: "bytes written / unique: 2 shards together", Input: in.input, WallText: fmt.Sprintf("%.2f", ratio), Target: "1.00", Met: met(fmt.Sprintf("%.2f", ratio) == "1.00")})

	m, err = Exec(ctx, airlockMirror("--plan", plan, "--finish"))
	if err != nil || m.Exit != 0 {
		return rows, fmt.Errorf("--finish: %v %s", err, lastLine(m.Stderr))
	}
	rows = append(rows, Row{Name: "airlock mirror --plan --finish file:// (catalog, manifests, chunks renamed)", Input: in.input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU()})
	m, err = Exec(ctx, Command{Name: in.airlock, Args: []string{"archive", "verify", batch}})
	if err != nil || m.Exit != 0 {
		return rows, fmt.Errorf("archive verify of the sharded archive: %v %s", err, lastLine(m.Stderr))
	}
	rows = append(rows, Row{Name: "airlock archive verify (the assembled archive)", Input: in.input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(), Note: lastLine(m.Stdout)})
	return rows, nil
}
