package bench

import (
	"fmt"
	"time"
)

// loopbackRows are issue 31's loopback copy targets, which replace the wall
// ratio against the ingestion floor (on 2 cores that mostly measures three
// processes sharing them): client CPU per GB copied against the copy floor's
// client, and destination requests per unique blob.
func loopbackRows(input string, unique int64, blobs int, m2m, copyFloor copyRun) []Row {
	if !m2m.ok || unique <= 0 {
		return nil
	}
	gb := float64(unique) / 1e9
	var rows []Row
	if copyFloor.ok {
		// The floor runs inside the harness: its CPU includes the counting
		// proxies, which carry the same bytes as in the m2m run, where they
		// are counted apart (everything m2m cost less the client and the
		// registries).
		proxies := max(0, m2m.cpu-m2m.row.CPU-m2m.row.RegCPU)
		floorClient := max(0, copyFloor.row.CPU-proxies)
		a, f := m2m.row.CPU.Seconds()/gb, floorClient.Seconds()/gb
		rows = append(rows, Row{Name: "loopback: client CPU per GB copied, airlock m2m / copy floor client", Input: input,
			WallText: fmt.Sprintf("%.2f / %.2f s/GB", a, f), Target: "≤ the copy floor client's", Met: met(a <= f),
			Note: fmt.Sprintf("airlock client %s; copy floor %s in the harness, less the counting proxies' %s (their CPU in the m2m run)",
				cpuSeconds(m2m.row.CPU), cpuSeconds(copyFloor.row.CPU), cpuSeconds(proxies))})
	}
	if blobs > 0 {
		r := float64(m2m.dstReq) / float64(blobs)
		rows = append(rows, Row{Name: "loopback: destination requests per blob, airlock m2m", Input: input,
			WallText: fmt.Sprintf("%.2f", r), Target: "≤ 2.5", Met: met(r <= 2.5),
			Note: fmt.Sprintf("%d requests for %d unique blobs (manifests, tags and the catalog image included)", m2m.dstReq, blobs)})
	}
	return rows
}

func cpuSeconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
