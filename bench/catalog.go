package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The real-scale catalog (SOURCES.md of the fixture).
const (
	realArchive = "large/community-operators-prod-all.tar.zst"
	realFiles   = 333
	realBytes   = 1_716_262_620
)

// Targets from the issue.
const (
	targetWall = 10 * time.Second
	targetRSS  = 500_000_000
)

type catalogInput struct {
	label string
	dir   string
	bytes int64
	files int
	real  bool
}

// runCatalogs measures the catalog commands on every input.
func runCatalogs(ctx context.Context, cfg Config) ([]Row, error) {
	var rows []Row
	var errs []error
	for _, name := range cfg.Catalogs {
		in, err := catalogFor(ctx, cfg, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("catalog input %s: %w", name, err))
			continue
		}
		r, err := measureCatalog(ctx, cfg, in)
		rows = append(rows, r...)
		if err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return rows, errors.Join(errs...)
}

func catalogFor(ctx context.Context, cfg Config, name string) (catalogInput, error) {
	switch name {
	case "real":
		dir, err := realCatalog(ctx, cfg)
		if err != nil {
			return catalogInput{}, err
		}
		return catalogInput{label: "real-scale (community-operators-prod, all bundles)", dir: dir, bytes: realBytes, files: realFiles, real: true}, nil
	case "small", "large":
		dir, err := generated(ctx, cfg, name)
		if err != nil {
			return catalogInput{}, err
		}
		n, b, err := dirSize(dir)
		if err != nil {
			return catalogInput{}, err
		}
		return catalogInput{label: "generated " + name, dir: dir, bytes: b, files: n}, nil
	}
	n, b, err := dirSize(name)
	if err != nil {
		return catalogInput{}, err
	}
	return catalogInput{label: filepath.Base(name), dir: name, bytes: b, files: n}, nil
}

// realCatalog returns the root of the unpacked real-scale catalog: RealDir
// when complete, else the fixture unpacked into the work directory.
func realCatalog(ctx context.Context, cfg Config) (string, error) {
	reuse := cfg.RealDir
	if reuse == "" {
		reuse = "/tmp/airlock-large/catalog"
	}
	if n, b, err := dirSize(reuse); err == nil && n == realFiles && b == realBytes {
		cfg.Log.Info("reusing the unpacked real-scale catalog", "dir", reuse)
		return reuse, nil
	}
	fx := cfg.Fixtures
	if fx == "" {
		fx = os.Getenv("AIRLOCK_FIXTURES")
	}
	if fx == "" {
		fx = filepath.Join(cfg.RepoRoot, "..", "shared", "fixtures")
	}
	archive := filepath.Join(fx, realArchive)
	if _, err := os.Stat(archive); err != nil {
		return "", fmt.Errorf("real-scale catalog not found: %w (set AIRLOCK_FIXTURES to the folder holding %s)", err, realArchive)
	}
	if _, err := exec.LookPath("zstd"); err != nil {
		return "", errors.New("zstd is needed to unpack the real-scale catalog: apt-get install zstd")
	}
	dst := filepath.Join(cfg.WorkDir, "real")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	cfg.Log.Info("unpacking the real-scale catalog", "archive", archive, "to", dst)
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "sh", "-c", `zstd -dc "$1" | tar -xf - -C "$2"`, "sh", archive, dst)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack %s: %w: %s", archive, err, out)
	}
	root := filepath.Join(dst, "catalog")
	n, b, err := dirSize(root)
	if err != nil {
		return "", err
	}
	if n != realFiles || b != realBytes {
		return "", fmt.Errorf("unpacked %s has %d files, %d bytes; SOURCES.md says %d files, %d bytes", archive, n, b, realFiles, realBytes)
	}
	cfg.Log.Info("unpacked", "took", time.Since(t0).Round(time.Millisecond))
	return root, nil
}

// generated runs internal/gen/catalog with a preset into the work directory.
func generated(ctx context.Context, cfg Config, preset string) (string, error) {
	bin := filepath.Join(cfg.WorkDir, "gen-catalog")
	if _, err := os.Stat(bin); err != nil {
		if out, err := goCmd(ctx, cfg.RepoRoot, "build", "-o", bin, "./internal/gen/catalog").CombinedOutput(); err != nil {
			return "", fmt.Errorf("build ./internal/gen/catalog: %w: %s", err, out)
		}
	}
	dir := filepath.Join(cfg.WorkDir, "gen-"+preset)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	cfg.Log.Info("generating catalog", "preset", preset, "to", dir)
	if out, err := exec.CommandContext(ctx, bin, "-preset", preset, "-o", dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("generate the %s catalog: %w: %s", preset, err, out)
	}
	return dir, nil
}

// dirSize counts the regular files under dir and their bytes.
func dirSize(dir string) (files int, bytes int64, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			files++
			bytes += info.Size()
		}
		return nil
	})
	return files, bytes, err
}

var loadedRe = regexp.MustCompile(`msg="loaded catalog".*duration=(\S+)`)

// series is Count runs of one command.
type series struct {
	ms    []Measure
	loads []time.Duration
	fail  string
}

func (s series) median() Measure {
	ms := append([]Measure(nil), s.ms...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Wall < ms[j].Wall })
	m := ms[len(ms)/2]
	for _, x := range s.ms {
		m.MaxRSS = max(m.MaxRSS, x.MaxRSS)
	}
	return m
}

func (s series) load() time.Duration {
	if len(s.loads) == 0 {
		return 0
	}
	l := append([]time.Duration(nil), s.loads...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[len(l)/2]
}

func measureCatalog(ctx context.Context, cfg Config, in catalogInput) ([]Row, error) {
	log := cfg.Log
	dir, err := filepath.Abs(in.dir)
	if err != nil {
		return nil, err
	}
	work := filepath.Join(cfg.WorkDir, "catalog-"+strings.ReplaceAll(in.label, " ", "_"))
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	heads := filepath.Join(work, "heads.yaml")
	full := filepath.Join(work, "full.yaml")
	isc := "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: oci://" + dir + "\n"
	if err := os.WriteFile(heads, []byte(isc), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(full, []byte(isc+"    full: true\n"), 0o644); err != nil {
		return nil, err
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	out := filepath.Join(work, "out")
	run := func(what string, c Command, okExit func(int) bool) series {
		var s series
		for i := 0; i < cfg.Count; i++ {
			_ = os.RemoveAll(out)
			log.Info("measuring", "what", what, "input", in.label, "run", i+1)
			m, err := Exec(ctx, c)
			if err != nil {
				s.fail = err.Error()
				return s
			}
			if !okExit(m.Exit) {
				s.fail = fmt.Sprintf("exit %d: %s", m.Exit, lastLine(m.Stderr))
				return s
			}
			if sm := loadedRe.FindStringSubmatch(m.Stderr); sm != nil {
				if d, err := time.ParseDuration(sm[1]); err == nil {
					s.loads = append(s.loads, d)
				}
			}
			s.ms = append(s.ms, m)
		}
		return s
	}
	zero := func(c int) bool { return c == 0 }
	validOrInvalid := func(c int) bool { return c == 0 || c == 1 } // 1: the catalog has problems (still measured)
	a := cfg.Airlock
	val := run("validate", Command{Name: a, Args: []string{"catalog", "validate", dir}}, validOrInvalid)
	ren := run("render", Command{Name: a, Args: []string{"catalog", "render", dir}, Stdout: devnull}, zero)
	ph := run("prune heads-only", Command{Name: a, Args: []string{"--log-level", "debug", "catalog", "prune", "-c", heads, "-o", out, dir}}, zero)
	_, headsOut, _ := dirSize(out)
	pf := run("prune full", Command{Name: a, Args: []string{"--log-level", "debug", "catalog", "prune", "-c", full, "-o", out, dir}}, zero)
	_, fullOut, _ := dirSize(out)
	_ = os.RemoveAll(out)

	input := fmt.Sprintf("%s: %d files, %s", in.label, in.files, Bytes(in.bytes))
	rows := []Row{heading("catalog: " + in.label)}
	row := func(name string, s series, note, opm string, target bool) {
		r := Row{Name: name, Input: input}
		if s.fail != "" || len(s.ms) == 0 {
			r.Note = "FAILED: " + s.fail
			if target {
				r.Met = "NO"
			}
			rows = append(rows, r)
			return
		}
		m := s.median()
		r.Wall, r.RSS, r.CPU = m.Wall, m.MaxRSS, m.CPU()
		r.Throughput = Rate(in.bytes, m.Wall)
		r.Note = note
		if opm != "" {
			r.Note = strings.TrimPrefix(r.Note+"; "+opm, "; ")
		}
		if target {
			r.Target = "< 10 s, < 500 MB"
			r.Met = met(m.Wall < targetWall && m.MaxRSS < targetRSS)
		}
		if m.Exit == 1 {
			r.Note = strings.TrimPrefix(r.Note+"; catalog INVALID: "+lastLine(m.Stdout), "; ")
		}
		rows = append(rows, r)
	}
	if l := ph.load(); l > 0 {
		rows = append(rows, Row{Name: "load (inside prune heads-only, from its debug log)", Input: input, Wall: l, Throughput: Rate(in.bytes, l)})
	}
	row("catalog validate", val, "", ifReal(in.real, "opm validate: 173 s, 8.4 GiB"), in.real)
	row("catalog render > /dev/null (load + write)", ren, "", ifReal(in.real, "opm render: 106 s, 5.6 GiB"), false)
	note := func(s series, written int64) string {
		n := "wrote " + Bytes(written)
		if l := s.load(); l > 0 && len(s.ms) > 0 {
			n += fmt.Sprintf("; filter + validate + write %s after load", Seconds(s.median().Wall-l))
		}
		return n
	}
	row("catalog prune heads-only (load + filter + validate + write)", ph, note(ph, headsOut), ifReal(in.real, "oc-mirror v2 dry run heads-only: 124 s, 5.6 GiB"), in.real)
	row("catalog prune full: true", pf, note(pf, fullOut), ifReal(in.real, "oc-mirror v2 dry run full: 112 s, 5.6 GiB"), false)
	return rows, nil
}

func ifReal(real bool, s string) string {
	if real {
		return s
	}
	return ""
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
