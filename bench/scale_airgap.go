package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-mirror/airlock/internal/browser"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/workspace"
)

// scaleAirGap measures, for one size of the scale section, the air gap
// (mirror-to-disk from the source, disk-to-mirror of that archive into a
// fresh registry) and `delete --generate` of the whole catalog against the
// mirror-to-mirror workspace ws (its history: every image one run put
// there). Each row gives the wall per 1,000 images, for the growth rows.
func scaleAirGap(ctx context.Context, cfg Config, r *scaleRun, work string, seed *seeded, env []string, ws, dest, input string) ([]Row, error) {
	images := r.n
	per := func(d time.Duration) string { return Seconds(d * 1000 / time.Duration(images)) }
	var rows []Row
	arch := filepath.Join(work, "archive")
	isc := filepath.Join(work, "isc.yaml")
	exec := func(what string, args ...string) (Measure, error) {
		cfg.Log.Info("measuring", "what", what, "images", images)
		m, err := Exec(ctx, Command{Name: cfg.Airlock, Args: args, Env: cfg.scaleEnv(env, r.size, what)})
		if err == nil && m.Exit != 0 {
			err = fmt.Errorf("%s: exit %d: %s", what, m.Exit, lastLine(m.Stderr))
		}
		return m, err
	}
	m, err := exec("scale: m2d", "mirror", "-c", isc, location.File(arch).String(), "--src-tls-verify=false")
	if err != nil {
		return rows, err
	}
	r.m2d = m
	_, written, _ := archiveSize(filepath.Join(arch, "batch-0001"))
	rows = append(rows, Row{Name: "scale: m2d first run", Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(), Pulled: -1, Pushed: written, Counted: true,
		Note: fmt.Sprintf("%s wall per 1,000 images; pushed = the archive chunks", per(m.Wall))})

	dst, err := StartRegistry(ctx, cfg.Registry, filepath.Join(work, "dst-d2m"))
	if err != nil {
		return rows, err
	}
	defer dst.Stop()
	d0 := dst.Proxy.Counts()
	m, err = exec("scale: d2m", "mirror", "-c", isc, "--from", location.File(filepath.Join(arch, "batch-0001")).String(),
		"--workspace", location.File(filepath.Join(work, "ws-d2m")).String(), location.Docker(dst.Addr()+"/mirror").String(), "--dest-tls-verify=false", "--max-nested-paths", fmt.Sprint(scaleMaxNestedPaths))
	if err != nil {
		return rows, err
	}
	r.d2m = m
	dd := dst.Proxy.Counts().Sub(d0)
	rows = append(rows, Row{Name: "scale: d2m (from that archive, fresh registry)", Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(), Pulled: -1, Pushed: dd.BytesIn, Counted: true,
		Requests: fmt.Sprintf("– / %d", dd.Requests), Note: fmt.Sprintf("%s wall per 1,000 images; %.2f destination requests per image", per(m.Wall), float64(dd.Requests)/float64(images))})
	_ = os.RemoveAll(arch)

	del := filepath.Join(work, "delete-isc.yaml")
	if err := os.WriteFile(del, scaleConfig("DeleteImageSetConfiguration", "delete", seed), 0o644); err != nil {
		return rows, err
	}
	m, err = exec("scale: delete --generate", "delete", "--generate", "-c", del, "--workspace", location.File(ws).String(), location.Docker(dest).String(),
		"--dest-tls-verify=false")
	if err != nil {
		return rows, err
	}
	r.del = m
	plan := fileSize(workspace.At(ws).DeletePlanPath())
	rows = append(rows, Row{Name: "scale: delete --generate (the whole catalog, against the m2m history)", Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(),
		Note: fmt.Sprintf("%s wall per 1,000 images; plan %s (%s per image)", per(m.Wall), Bytes(plan), Bytes(plan/int64(images)))})
	return rows, nil
}

// reportOpen opens page in headless Chromium (internal/browser) and returns
// the time from navigation to the end of its load event, a layout forced
// after it included; 0 and why when no browser is found or it fails.
func reportOpen(ctx context.Context, page string) (time.Duration, string) {
	bin := browser.Find()
	if bin == "" {
		return 0, "no chromium (apt-get install chromium)"
	}
	eval := `(() => { const n = performance.getEntriesByType("navigation")[0]; const t = performance.now();
		document.body.getBoundingClientRect(); document.documentElement.scrollHeight; return n.loadEventEnd + performance.now() - t; })()`
	res, err := browser.Open(ctx, bin, page, browser.Options{Eval: eval})
	if err != nil {
		return 0, err.Error()
	}
	var ms float64
	if err := json.Unmarshal(res.Value, &ms); err != nil || ms <= 0 {
		return 0, fmt.Sprintf("no timing from the browser (%s)", res.Value)
	}
	return time.Duration(ms * float64(time.Millisecond)), ""
}
