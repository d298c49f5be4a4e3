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

// latencyLink is the WAN preset whose rows are latency-bound: the catalog
// scale section measures it with latencyOverLink instead of mirrorOverLink.
const latencyLink = "rtt50"

// dependentTrips is the longest chain of source requests of a first
// mirror-to-mirror run that each wait for the one before, whatever the
// concurrency: the registry's challenge and a token, the catalog's manifest,
// its layer (a GET answered 307, then the CDN's), a token for an image's
// repository, its manifest and an index's instance, then a blob (307, CDN).
// Signature discovery adds the repository's tag list and the question to its
// host about the referrers API.
func dependentTrips(signatures bool) int {
	n := 2 + 1 + 2 + 1 + 2 + 2
	if signatures {
		n += 2
	}
	return n
}

// latencyOverLink measures the first mirror-to-mirror run of a workload of
// small images over a link with round trips and no bandwidth cap, with
// signature discovery on (best-effort, the default) and off, each into a
// fresh destination: source requests per image, and the wall against the
// floor (the dependent chain of round trips plus the client's CPU); then
// oc-mirror v2's same mirror over the same link, against airlock's with
// signature discovery on (its default).
func latencyOverLink(ctx context.Context, cfg Config, link string, wc registrytest.WANConfig, wan *registrytest.WAN,
	src *Registry, isc, work, input string, images, repos int, unique int64) ([]Row, error) {
	var rows []Row
	perImage := map[string]float64{}
	total := map[string]int64{}
	walls := map[string]time.Duration{}
	for _, mode := range []string{"best-effort", "off"} {
		dir := filepath.Join(work, mode)
		dst, err := StartRegistry(ctx, cfg.Registry, filepath.Join(dir, "dst"))
		if err != nil {
			return rows, err
		}
		args := []string{"mirror", "-c", isc, "--workspace", location.File(filepath.Join(dir, "ws")).String(), location.Docker(dst.Addr() + "/mirror").String(),
			"--dest-tls-verify=false", "--src-tls-verify=false", "--signatures", mode}
		what := fmt.Sprintf("latency-bound m2m over %s, signatures %s", link, mode)
		cfg.Log.Info("measuring", "what", what)
		w0, s0 := wan.Stats(), src.Proxy.Counts()
		m, err := Exec(ctx, Command{Name: cfg.Airlock, Args: args})
		ws, sc := wan.Stats(), src.Proxy.Counts().Sub(s0)
		dst.Stop()
		_ = os.RemoveAll(dir)
		if err != nil {
			return rows, err
		}
		reqs := ws.Requests - w0.Requests
		perImage[mode], total[mode], walls[mode] = float64(reqs)/float64(images), reqs, m.Wall
		floor := time.Duration(dependentTrips(mode != "off"))*wc.Latency + wc.Handshake + m.CPU()
		r := Row{Name: what, Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(),
			Requests: fmt.Sprintf("%d / –", reqs),
			Note: fmt.Sprintf("%.2f source requests per image; at the registry: %d manifest GET, %d blob GET, %d other (tag lists, referrers); link %s; over the link: %d connections, %d token requests",
				perImage[mode], sc.ManifestGET, sc.BlobGET, sc.Requests-sc.ManifestGET-sc.ManifestHEAD-sc.BlobGET-sc.BlobHEAD, wc,
				ws.Connections-w0.Connections, ws.TokenRequests-w0.TokenRequests)}
		if m.Exit != 0 {
			r.Note = fmt.Sprintf("FAILED (exit %d): %s", m.Exit, lastLine(m.Stderr))
			return append(rows, r), fmt.Errorf("%s: exit %d: %s", what, m.Exit, lastLine(m.Stderr))
		}
		rows = append(rows, r, Row{Name: what + " / floor", Input: input, WallText: fmt.Sprintf("%.2f×", float64(m.Wall)/float64(floor)),
			Note: fmt.Sprintf("floor %s = %d dependent round trips × %v + %v handshake + %s client CPU", Seconds(floor),
				dependentTrips(mode != "off"), wc.Latency, wc.Handshake, Seconds(m.CPU()))})
	}
	extra := total["best-effort"] - total["off"]
	rows = append(rows, Row{Name: fmt.Sprintf("latency-bound m2m over %s: signature discovery's source requests per repository", link), Input: input,
		WallText: fmt.Sprintf("%.2f", float64(extra)/float64(repos)), Target: "≤ 1 + 2 per host", Met: met(extra <= int64(repos)+2),
		Note: fmt.Sprintf("%d requests more with signatures best-effort than off (%.2f / %.2f per image, ratio %.2f×) for %d repositories: a tag list each, and the host's referrers API asked once",
			extra, perImage["best-effort"], perImage["off"], perImage["best-effort"]/perImage["off"], repos)})
	or, err := ocMirrorOverLink(ctx, cfg, ocMirrorRun{Name: "oc-mirror v2 latency-bound m2m over " + link, Target: ocMirrorReleaseTarget},
		link, wc, wan, src, isc, filepath.Join(work, "oc-mirror"), input, unique, walls["best-effort"])
	return append(rows, or...), err
}
