package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The YAML rows: the real-scale catalog rendered as YAML, measured
// against the JSON figures of the same run, and community-operators-prod
// v4.21 (real YAML) side by side with opm.

const (
	// v421Root is the YAML fixture compared with opm, relative to the fixtures.
	v421Root = "real-catalogs/community-operators-prod-v4.21/catalogs/v4.21"
	// The YAML rows' targets (docs/benchmarks.md, "Targets and reference figures").
	targetYAMLRatio = 3.0
	targetYAMLRSS   = 300_000_000
	targetOpmRatio  = 10.0
)

func fixturesDir(cfg Config) string {
	if cfg.Fixtures != "" {
		return cfg.Fixtures
	}
	if fx := os.Getenv("AIRLOCK_FIXTURES"); fx != "" {
		return fx
	}
	return filepath.Join(cfg.RepoRoot, "..", "shared", "fixtures")
}

// realYAML returns the real-scale catalog rendered as YAML: for every package
// directory of the JSON catalog, its catalog.yaml written by `airlock catalog
// render -o yaml`, so that the YAML catalog has as many files as the JSON
// one. An earlier rendering in RealYAMLDir is reused when complete.
func realYAML(ctx context.Context, cfg Config) (string, error) {
	src, err := realCatalog(ctx, cfg)
	if err != nil {
		return "", err
	}
	dst := cfg.RealYAMLDir
	if dst == "" {
		dst = filepath.Join(cfg.WorkDir, "real-yaml")
	}
	marker := dst + ".rendered" // beside it: a file inside would be read as part of the catalog
	if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(realFiles) {
		cfg.Log.Info("reusing the YAML rendering of the real-scale catalog", "dir", dst)
		return dst, nil
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	cfg.Log.Info("rendering the real-scale catalog as YAML", "from", src, "to", dst)
	t0 := time.Now()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 2)
	)
	for _, e := range ents {
		if !e.IsDir() {
			return "", fmt.Errorf("real-scale catalog: unexpected file %s at the root", e.Name())
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(name string) {
			defer wg.Done()
			defer func() { <-sem }()
			err := renderYAML(ctx, cfg.Airlock, filepath.Join(src, name), filepath.Join(dst, name, "catalog.yaml"))
			mu.Lock()
			if err != nil && first == nil {
				first = err
			}
			mu.Unlock()
		}(e.Name())
	}
	wg.Wait()
	if first != nil {
		return "", first
	}
	if err := os.WriteFile(marker, []byte(strconv.Itoa(len(ents))+"\n"), 0o644); err != nil {
		return "", err
	}
	cfg.Log.Info("rendered", "took", time.Since(t0).Round(time.Millisecond))
	return dst, nil
}

// renderYAML runs `airlock catalog render --format yaml dir > out`.
func renderYAML(ctx context.Context, airlock, dir, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, airlock, "catalog", "render", "--format", "yaml", dir)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("catalog render --format yaml %s: %w: %s", dir, err, lastLine(stderr.String()))
	}
	return nil
}

// ratio is a/b as "N.N×".
func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f×", float64(a)/float64(b))
}

// yamlVsJSON sets the target columns of a YAML row against the same command
// on the JSON catalog: within 3× of its wall time, under 300 MB.
func yamlVsJSON(r *Row, yaml, json Measure) {
	r.Target = "≤ 3× JSON, < 300 MB"
	ok := json.Wall > 0 && float64(yaml.Wall) <= targetYAMLRatio*float64(json.Wall) && yaml.MaxRSS < targetYAMLRSS
	r.Met = met(ok)
	r.Note = strings.TrimPrefix(fmt.Sprintf("%s; %s the JSON wall time (%s), %s its CPU", r.Note, ratio(yaml.Wall, json.Wall), Seconds(json.Wall), ratio(yaml.CPU(), json.CPU())), "; ")
}

// vsOpm sets the target columns of an airlock row on v4.21 against opm render
// measured in the same run: at least 10× less CPU (medians of the runs' CPU).
func vsOpm(r *Row, ours, opm time.Duration) {
	r.Target = "≥ 10× less CPU than opm render"
	x := float64(opm) / float64(max(ours, time.Millisecond))
	r.Met = met(x >= targetOpmRatio)
	r.Note = strings.TrimPrefix(fmt.Sprintf("%s; median CPU %s, opm render's %s: %.1f×", r.Note, Seconds(ours), Seconds(opm), x), "; ")
}
