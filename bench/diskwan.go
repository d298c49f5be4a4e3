package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
)

// diskLinkTarget is the target of mirror-to-disk over a simulated link: its
// first run over the link floor (unique bytes / cap), as for m2m over wan.
const diskLinkTarget = 1.15

// diskOverLink measures the first mirror-to-disk run of the catalog-scale
// workload over one link (the source behind the WAN simulator, the archive
// on the local disk) and its wall over the link floor: the air gap's
// connected side over a real link.
func diskOverLink(ctx context.Context, cfg Config, link string, wc registrytest.WANConfig, wan *registrytest.WAN, src *Registry,
	isc, work, input string, unique int64) ([]Row, error) {
	defer os.RemoveAll(work)
	args := []string{"mirror", "-c", isc, location.File(filepath.Join(work, "archive")).String(), "--src-tls-verify=false"}
	if cfg.ParallelImages > 0 {
		args = append(args, "--parallel-images", fmt.Sprint(cfg.ParallelImages))
	}
	if cfg.ParallelLayers > 0 {
		args = append(args, "--parallel-layers", fmt.Sprint(cfg.ParallelLayers))
	}
	name := "catalog scale m2d over " + link + ", first run"
	s0, w0 := src.Proxy.Counts(), wan.Stats()
	cfg.Log.Info("measuring", "what", name)
	m, err := Exec(ctx, Command{Name: cfg.Airlock, Args: args})
	if err != nil {
		return nil, err
	}
	ds, ws := src.Proxy.Counts().Sub(s0), wan.Stats()
	_, written, _ := archiveSize(filepath.Join(work, "archive", "batch-0001"))
	r := Row{Name: name, Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(), Pulled: ds.BytesOut, Pushed: written, Counted: true,
		Blobs: "–", Requests: fmt.Sprintf("%d / –", ws.Requests-w0.Requests),
		Note: fmt.Sprintf("pushed = the archive chunks written; link %s; over the link: %d connections, %d token requests, %d CDN redirects, %d answered 429",
			wc, ws.Connections-w0.Connections, ws.TokenRequests-w0.TokenRequests, ws.Redirects-w0.Redirects, ws.Throttled-w0.Throttled)}
	if ds.BlobBytesOut > 0 {
		r.Throughput = Rate(ds.BlobBytesOut, m.Wall)
	}
	if m.Exit != 0 {
		r.Note = fmt.Sprintf("FAILED (exit %d): %s", m.Exit, lastLine(m.Stderr))
		return []Row{r}, fmt.Errorf("%s: exit %d: %s", name, m.Exit, lastLine(m.Stderr))
	}
	rows := []Row{r}
	if wc.Bandwidth > 0 {
		floor := time.Duration(float64(unique) / float64(wc.Bandwidth) * float64(time.Second))
		ratio := float64(m.Wall) / float64(floor)
		rows = append(rows, Row{Name: "catalog scale m2d over " + link + " / link floor (unique bytes / cap)", Input: input, WallText: fmt.Sprintf("%.2f×", ratio),
			Note:   fmt.Sprintf("floor %s = %s / %.0f MB/s", Seconds(floor), Bytes(unique), float64(wc.Bandwidth)/1e6),
			Target: fmt.Sprintf("≤ %.2f×", diskLinkTarget), Met: met(ratio <= diskLinkTarget)})
	}
	return rows, nil
}
