package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
)

// ocMirrorTarget is the target speed-up over oc-mirror v2 on the catalog-scale
// workload over wan; ocMirrorReleaseTarget on the release workload and on the
// latency-bound row.
const (
	ocMirrorTarget        = 2.0
	ocMirrorReleaseTarget = 3.0
)

// ocMirrorRun says how a section runs oc-mirror: its rows' name (what it
// mirrors, "oc-mirror v2 m2m over LINK" by default), the speed-up wanted, and
// more environment (the release rows' update service and signature store).
type ocMirrorRun struct {
	Name   string
	Target float64
	Env    []string
	// DstRoot is the destination registry's storage (default work/dst).
	DstRoot string
}

// FindOcMirror is the oc-mirror binary to compare with: flag (-oc-mirror),
// else oc-mirror on PATH, else the one scripts/build-oc-mirror.sh built
// (OcMirrorCache); "" when there is none.
func FindOcMirror(flag string) string {
	if flag != "" {
		return flag
	}
	if p, err := exec.LookPath("oc-mirror"); err == nil {
		return p
	}
	if p := OcMirrorCache(); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// OcMirrorCache is where scripts/build-oc-mirror.sh writes the oc-mirror
// binary it builds: $AIRLOCK_BENCH_CACHE/oc-mirror/oc-mirror, by default under
// ~/.cache/airlock-bench ("" when there is no home directory).
func OcMirrorCache() string {
	dir := os.Getenv("AIRLOCK_BENCH_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "airlock-bench")
	}
	return filepath.Join(dir, "oc-mirror", "oc-mirror")
}

// ocMirrorOverLink runs oc-mirror v2's mirror-to-mirror of the same
// ImageSetConfiguration over the same link into a fresh destination, in the
// same sitting as airlock's first run (wall airlock), and the speed-up row.
// oc-mirror keeps its cache and its local registry under work.
func ocMirrorOverLink(ctx context.Context, cfg Config, run ocMirrorRun, link string, wc registrytest.WANConfig, wan *registrytest.WAN,
	src *Registry, isc, work, input string, unique int64, airlock time.Duration) ([]Row, error) {
	name := run.Name
	if name == "" {
		name = "oc-mirror v2 m2m over " + link
	}
	target := run.Target
	if target == 0 {
		target = ocMirrorTarget
	}
	if cfg.OcMirror == "" {
		return []Row{{Name: name, Input: input, Target: fmt.Sprintf("airlock ≥ %.0f× faster", target),
			Note: "not available: no oc-mirror binary (-oc-mirror PATH, oc-mirror on PATH, or scripts/build-oc-mirror.sh builds one: bench/ocmirror/README.md)"}}, nil
	}
	dstRoot := run.DstRoot
	if dstRoot == "" {
		dstRoot = filepath.Join(work, "dst")
	}
	dst, err := StartRegistry(ctx, cfg.Registry, dstRoot)
	if err != nil {
		return nil, err
	}
	defer func() { dst.Stop(); _ = os.RemoveAll(dstRoot); _ = os.RemoveAll(work) }()
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	cmd := Command{Name: cfg.OcMirror, Dir: work, Env: append([]string{"HOME=" + home, "XDG_RUNTIME_DIR=" + home}, run.Env...),
		Args: []string{"--v2", "-c", isc, "--workspace", location.File(filepath.Join(work, "ws")).String(), "--cache-dir", filepath.Join(work, "cache"),
			"-p", fmt.Sprint(port), location.Docker(dst.Addr() + "/mirror").String(), "--dest-tls-verify=false", "--src-tls-verify=false"}}
	s0, d0, w0 := src.Proxy.Counts(), dst.Proxy.Counts(), wan.Stats()
	cfg.Log.Info("measuring", "what", name)
	m, err := Exec(ctx, cmd)
	if err != nil {
		return nil, err
	}
	ds, dd, ws := src.Proxy.Counts().Sub(s0), dst.Proxy.Counts().Sub(d0), wan.Stats()
	ds.BytesOut += ws.BlobFileBytes - w0.BlobFileBytes // served from the source's files (WANConfig.BlobRoot)
	r := Row{Name: name + ", first run", Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(), Pulled: ds.BytesOut, Pushed: dd.BytesIn, Counted: true,
		Blobs: fmt.Sprintf("%d (%d)", dd.BlobsCommitted, dd.Mounted), Requests: fmt.Sprintf("%d / %d", ws.Requests-w0.Requests, dd.Requests),
		Note: fmt.Sprintf("%s; link %s; over the link: %d connections, %d token requests, %d CDN redirects, %d answered 429; sent / unique %.2f",
			cfg.OcMirror, wc, ws.Connections-w0.Connections, ws.TokenRequests-w0.TokenRequests, ws.Redirects-w0.Redirects,
			ws.Throttled-w0.Throttled, float64(dd.UploadBytesIn)/float64(unique))}
	// Its output is kept in the run's work folder (-keep keeps it): retries
	// ("retrying in") would explain a slow run.
	logFile := filepath.Join(cfg.WorkDir, "oc-mirror-"+strings.NewReplacer(" ", "-", ",", "", "/", "-", "(", "", ")", "").Replace(name)+".log")
	_ = os.WriteFile(logFile, []byte(m.Stdout+m.Stderr), 0o644)
	if n := strings.Count(m.Stdout+m.Stderr, "retrying in"); n > 0 {
		r.Note += fmt.Sprintf("; %d retries", n)
	}
	if m.Exit != 0 {
		r.Note = fmt.Sprintf("FAILED (exit %d): %s", m.Exit, lastLine(m.Stderr+m.Stdout))
		return []Row{r}, fmt.Errorf("%s: exit %d (its output: %s; -keep keeps it)", name, m.Exit, logFile)
	}
	rows := []Row{r}
	if airlock > 0 {
		x := float64(m.Wall) / float64(airlock)
		rows = append(rows, Row{Name: name + " / airlock m2m (wall: speed-up)", Input: input, WallText: fmt.Sprintf("%.2f×", x),
			Target: fmt.Sprintf("≥ %.0f×", target), Met: met(x >= target),
			Note: fmt.Sprintf("oc-mirror %s, airlock %s, one after the other into fresh destinations", Seconds(m.Wall), Seconds(airlock))})
	}
	return rows, nil
}

// firstWall is the wall time of airlock's first run among a link's rows.
func firstWall(rows []Row) time.Duration {
	for _, r := range rows {
		if strings.HasSuffix(r.Name, ", first run") {
			return r.Wall
		}
	}
	return 0
}

// FreePort is a TCP port free on 127.0.0.1 just now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
