package bench

import (
	"fmt"
	"strings"
	"syscall"
	"time"
)

// copyRun is one measured copy.
type copyRun struct {
	row    Row
	wall   time.Duration
	blobs  int64 // blobs committed at the destination
	upload int64 // blob bytes uploaded to the destination
	dstReq int64 // requests to the destination
	ok     bool
	// cpu is everything the run cost the machine: the client, the registries
	// and this process's counting proxies.
	cpu time.Duration
	// apart says the client ran in a process of its own (a floor client
	// through the floor-push subcommand): row.CPU is exactly the client's.
	apart bool
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopbackRows are the loopback copy targets (docs/benchmarks.md), which replace the wall
// ratio against the ingestion floor (on 2 cores that mostly measures three
// processes sharing them): client CPU per GB copied against the copy floor's
// client, and destination requests per unique blob. The copy floor does not
// verify what it copies, airlock does: a second row compares with the
// verifying copy floor (the same client hashing every blob), the least a copy
// that verifies can cost; the target stays the copy floor's.
func loopbackRows(input string, unique int64, blobs int, m2m, copyFloor, verifyFloor copyRun) []Row {
	if !m2m.ok || unique <= 0 {
		return nil
	}
	gb := float64(unique) / 1e9
	var rows []Row
	// The floors run inside the harness: their CPU includes the counting
	// proxies, which carry the same bytes as in the m2m run, where they are
	// counted apart (everything m2m cost less the client and the registries).
	proxies := max(0, m2m.cpu-m2m.row.CPU-m2m.row.RegCPU)
	a := m2m.row.CPU.Seconds() / gb
	for _, f := range []struct {
		run          copyRun
		name, target string
		ref          bool
	}{
		{copyFloor, "copy floor client", "≤ the copy floor client's", true},
		{verifyFloor, "verifying copy floor client", "", false},
	} {
		if !f.run.ok {
			continue
		}
		floorClient := max(0, f.run.row.CPU-proxies)
		note := fmt.Sprintf("airlock client %s; %s %s in the harness, less the counting proxies' %s (their CPU in the m2m run)",
			cpuSeconds(m2m.row.CPU), strings.TrimSuffix(f.name, " client"), cpuSeconds(f.run.row.CPU), cpuSeconds(proxies))
		if f.run.apart {
			floorClient = f.run.row.CPU
			note = fmt.Sprintf("airlock client %s; %s %s, each in a process of its own (exact)",
				cpuSeconds(m2m.row.CPU), f.name, cpuSeconds(floorClient))
		}
		fc := floorClient.Seconds() / gb
		r := Row{Name: "loopback: client CPU per GB copied, airlock m2m / " + f.name, Input: input,
			WallText: fmt.Sprintf("%.2f / %.2f s/GB", a, fc), Target: f.target, Note: note}
		if f.ref {
			r.Met = met(a <= fc)
		} else {
			r.Note += "; not a target: the floor that verifies, as airlock does"
		}
		rows = append(rows, r)
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
