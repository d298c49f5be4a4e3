package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// runGoBench runs the packages' Go benchmarks once each and turns every result
// line into a row.
func runGoBench(ctx context.Context, cfg Config) ([]Row, error) {
	bt := cfg.GoBenchTime
	if bt == "" {
		bt = "1x"
	}
	args := append([]string{"test", "-tags", cfg.GoTags, "-run", "^$", "-bench", ".", "-benchtime", bt, "-benchmem"}, cfg.GoBenchPkgs...)
	cfg.Log.Info("running Go benchmarks", "cmd", "go "+strings.Join(args, " "))
	cmd := goCmd(ctx, cfg.RepoRoot, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run() // a failing package still lets the others report
	rows, failed := parseGoBench(out.String(), bt)
	rows = append([]Row{heading("go test -bench . -benchtime " + bt + " -benchmem " + strings.Join(cfg.GoBenchPkgs, " "))}, rows...)
	if len(failed) > 0 {
		return rows, fmt.Errorf("go benchmarks failed in %s", strings.Join(failed, ", "))
	}
	if err != nil && len(rows) == 1 {
		return rows, fmt.Errorf("go test -bench: %w: %s", err, lastLine(out.String()))
	}
	return rows, nil
}

// parseGoBench reads `go test -bench` output: one row per benchmark line, and
// the packages that failed.
func parseGoBench(s, benchtime string) (rows []Row, failed []string) {
	pkg := ""
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg = strings.TrimPrefix(line, "pkg: ")
		case strings.HasPrefix(line, "FAIL\t") || strings.HasPrefix(line, "FAIL "):
			f := strings.Fields(line)
			if len(f) >= 2 {
				failed = append(failed, f[1]+" "+strings.Join(f[2:], " "))
				rows = append(rows, Row{Name: f[1], Input: "go test -bench", Note: "FAILED: " + strings.Join(f[2:], " ")})
			}
		case strings.HasPrefix(line, "Benchmark"):
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "ns/op" {
				continue
			}
			ns, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				continue
			}
			name := f[0]
			if i := strings.LastIndexByte(name, '-'); i > 0 {
				if _, err := strconv.Atoi(name[i+1:]); err == nil {
					name = name[:i] // the GOMAXPROCS suffix
				}
			}
			short := pkg
			if i := strings.Index(short, "/airlock/"); i >= 0 {
				short = short[i+len("/airlock/"):]
			}
			r := Row{Name: short + "." + name, Input: "go test -benchtime " + benchtime + " (" + f[1] + " iter)", Wall: time.Duration(ns)}
			var notes []string
			for i := 4; i+1 < len(f); i += 2 {
				switch f[i+1] {
				case "MB/s":
					r.Throughput = f[i] + " MB/s"
				case "B/op":
					v, _ := strconv.ParseFloat(f[i], 64)
					notes = append(notes, "alloc "+Bytes(int64(v))+"/op")
				case "allocs/op":
					notes = append(notes, f[i]+" allocs/op")
				default:
					notes = append(notes, f[i]+" "+f[i+1])
				}
			}
			r.Note = strings.Join(notes, ", ")
			rows = append(rows, r)
		}
	}
	return rows, failed
}
