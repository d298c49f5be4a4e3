package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
)

// FloorPushCommand is the harness's subcommand that runs a floor client in a
// process of its own (FloorPushMain), so that its CPU is measured exactly,
// without the harness's counting proxies, which carry the same bytes.
const FloorPushCommand = "floor-push"

// floorResult is what FloorPushMain prints: the CPU and the wall time its
// push took (the workload's generation, before it, is not counted: it takes
// seconds of CPU for the reference workload) and what it sent.
type floorResult struct {
	CPU   time.Duration      `json:"cpu"`
	Wall  time.Duration      `json:"wall"`
	Stats workload.PushStats `json:"stats"`
}

// FloorPushMain is the floor-push subcommand: it builds the workload the
// options describe (JSON of workload.Options), pushes it to -registry (read
// from -from when set, hashed as it streams with -verify) and prints the push's
// own CPU time as JSON.
func FloorPushMain(args []string) error {
	fs := flag.NewFlagSet(FloorPushCommand, flag.ContinueOnError)
	opts := fs.String("workload", "", "the workload's options (JSON of workload.Options)")
	catalog := fs.String("catalog", "", "add the workload's catalog image, naming its images at this HOST:PORT (as the copy section does)")
	reg := fs.String("registry", "", "destination HOST:PORT")
	from := fs.String("from", "", "source HOST:PORT (a copy floor); empty: the content is generated (the ingestion floor)")
	verify := fs.Bool("verify", false, "hash each blob read from -from or -from-file as it streams")
	toFile := fs.String("to-file", "", "write the blobs read from -from into this file instead of pushing them (the mirror-to-disk floor)")
	fromFile := fs.String("from-file", "", "push the blobs from this file, written by -to-file (the disk-to-mirror floor)")
	parallel := fs.Int("parallel", 8, "concurrent requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var o workload.Options
	if err := json.Unmarshal([]byte(*opts), &o); err != nil || (*reg == "") == (*toFile == "") {
		return fmt.Errorf("%s: -workload JSON and one of -registry and -to-file are required (%v)", FloorPushCommand, err)
	}
	w, err := workload.New(o)
	if err != nil {
		return err
	}
	if *catalog != "" {
		if _, err := w.AddCatalog(*catalog); err != nil {
			return err
		}
	}
	c0, t0 := selfCPU(), time.Now()
	po := workload.PushOptions{Registry: *reg, Parallel: *parallel, From: *from, Verify: *verify, FromFile: *fromFile, ToFile: *toFile}
	var st workload.PushStats
	if *toFile != "" {
		st, err = w.PullToFile(context.Background(), po)
	} else {
		st, err = w.Push(context.Background(), po)
	}
	res := floorResult{CPU: selfCPU() - c0, Wall: time.Since(t0), Stats: st}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// pushApart runs the floor client in a process of its own (self, the harness
// binary, which has the floor-push subcommand) on the workload wo (with its
// catalog naming images at catalog, unless empty) and returns the CPU its
// push took, and its wall time.
func pushApart(ctx context.Context, self string, wo workload.Options, catalog string, o workload.PushOptions) (cpu, wall time.Duration, err error) {
	b, err := json.Marshal(wo)
	if err != nil {
		return 0, 0, err
	}
	args := []string{FloorPushCommand, "-workload", string(b), "-parallel", fmt.Sprint(o.Parallel)}
	if o.Registry != "" {
		args = append(args, "-registry", o.Registry)
	}
	if o.ToFile != "" {
		args = append(args, "-to-file", o.ToFile)
	}
	if o.FromFile != "" {
		args = append(args, "-from-file", o.FromFile)
	}
	if catalog != "" {
		args = append(args, "-catalog", catalog)
	}
	if o.From != "" {
		args = append(args, "-from", o.From)
	}
	if o.Verify {
		args = append(args, "-verify")
	}
	m, err := Exec(ctx, Command{Name: self, Args: args})
	if err != nil {
		return 0, 0, err
	}
	if m.Exit != 0 {
		return 0, 0, fmt.Errorf("%s: exit %d: %s", FloorPushCommand, m.Exit, lastLine(m.Stderr))
	}
	var res floorResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(m.Stdout)), &res); err != nil {
		return 0, 0, fmt.Errorf("%s: %w (%q)", FloorPushCommand, err, lastLine(m.Stdout))
	}
	if res.CPU <= 0 || res.Wall <= 0 {
		return 0, 0, errors.New(FloorPushCommand + ": no CPU or wall time reported")
	}
	return res.CPU, res.Wall, nil
}
