package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/location"
)

// The whole pipeline: the real-scale catalog as a one-layer catalog
// image in a local registry, every image it names seeded there as a small
// stand-in (so planning and the dry run resolve them), and `airlock mirror
// --dry-run` heads-only and full: true, first run (empty workspace) and cached
// run (same workspace). The seeded registry is kept in PipelineRoot and reused
// by later runs (seeding 20,912 images takes minutes); it listens on a fixed
// address because the seeded catalog names it.

// oc-mirror v2's figures for the same dry run on this machine (the reference
// figures of docs/benchmarks.md).
const (
	ocMirrorHeads = "oc-mirror v2: 124 s, 5.6 GiB"
	ocMirrorFull  = "oc-mirror v2: 112 s"
)

func runPipeline(ctx context.Context, cfg Config) ([]Row, error) {
	catalog, err := realCatalog(ctx, cfg)
	if err != nil {
		return nil, err
	}
	root := cfg.PipelineRoot
	if root == "" {
		root = filepath.Join(cfg.WorkDir, "pipeline-registry")
	}
	reg, err := StartRegistryAt(ctx, cfg.Registry, filepath.Join(root, "registry"), pipelineAddr)
	if err != nil {
		return nil, fmt.Errorf("%w (the whole-pipeline registry listens on %s, which must be free)", err, pipelineAddr)
	}
	defer reg.Stop()
	host := pipelineAddr
	rows := []Row{heading("Whole pipeline: the real-scale catalog as a catalog image, airlock mirror --dry-run")}
	marker := filepath.Join(root, "seeded")
	seedRow := Row{Name: "seed the registry (setup, not measured against a target)", Input: "real: catalog image + stand-ins"}
	if _, err := os.Stat(marker); err != nil {
		m, err := Exec(ctx, Command{Name: cfg.Airlock, Args: []string{"registry", "seed", "--registry", host,
			"--dest-tls-verify=false", "--catalog-dir", catalog, "--catalog-repo", "bench/index", "--work-dir", filepath.Join(cfg.WorkDir, "seed")}})
		if err != nil {
			return rows, fmt.Errorf("seed: %w: %s", err, m.Stderr)
		}
		seedRow.Wall, seedRow.CPU, seedRow.RSS = m.Wall, m.CPU(), m.MaxRSS
		seedRow.Note = lastLine(m.Stdout)
		_ = os.WriteFile(marker, []byte(m.Stdout), 0o644)
	} else {
		seedRow.Note = "reused from an earlier run (" + root + ")"
	}
	rows = append(rows, seedRow)
	for _, sel := range []struct {
		name, body, target, ref string
	}{
		{"heads-only", "", "first ≤ 10 s, ≤ 500 MB; cached ≤ 3 s", ocMirrorHeads},
		{"full: true", "    full: true\n", "", ocMirrorFull},
	} {
		cfgPath := filepath.Join(cfg.WorkDir, "pipeline-"+strings.ReplaceAll(sel.name, " ", "")+".yaml")
		isc := "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: " +
			host + "/bench/index:v1\n" + sel.body
		if err := os.WriteFile(cfgPath, []byte(isc), 0o644); err != nil {
			return rows, err
		}
		ws := filepath.Join(cfg.WorkDir, "pipeline-ws-"+strings.ReplaceAll(sel.name, " ", ""))
		_ = os.RemoveAll(ws)
		for _, run := range []string{"first run", "cached run"} {
			m, err := Exec(ctx, Command{Name: cfg.Airlock, Args: []string{"mirror", "-c", cfgPath, "--workspace", location.File(ws).String(),
				location.Docker(host + "/mirror").String(), "--dry-run", "--src-tls-verify=false", "--dest-tls-verify=false", "--log-level", "warn"},
				Stdout: devNull()})
			if err != nil || m.Exit != 0 {
				return rows, fmt.Errorf("mirror --dry-run %s %s: exit %d %v: %s", sel.name, run, m.Exit, err, m.Stderr)
			}
			r := Row{Name: "mirror --dry-run " + sel.name + ", " + run, Input: "real (1.7 GB catalog image)",
				Wall: m.Wall, CPU: m.CPU(), RSS: m.MaxRSS, Note: sel.ref}
			if sel.target != "" {
				r.Target = sel.target
				if run == "first run" {
					r.Met = met(m.Wall <= 10*time.Second && m.MaxRSS <= 500<<20)
				} else {
					r.Met = met(m.Wall <= 3*time.Second)
				}
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// pipelineAddr is where the seeded registry listens, run after run.
const pipelineAddr = "127.0.0.1:5479"

func devNull() *os.File {
	f, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	return f
}
