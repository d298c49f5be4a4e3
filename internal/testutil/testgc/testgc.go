// Package testgc sets the garbage collector of a test process that runs
// registries and workflows in process under the race detector.
//
// Such a process allocates mostly short-lived buffers (Distribution's
// registry allocates a 4 MiB read buffer for every blob it serves or
// verifies, however small the blob), and the race detector makes each
// collection and each freed range dearer. At Go's default (GOGC=100) the
// collector took about an eighth of pipeline's test CPU; at 400 it runs
// about a quarter as often, for a peak heap about 1.4 times larger
// (docs/development.md, "Where make test spends its time").
//
// Test support only: the binary never links it (internal/depcheck).
package testgc

import (
	"os"
	"runtime/debug"
)

const (
	// Percent is the GOGC of a test process.
	Percent = 400
	// Limit is the soft memory limit under which the heap may grow to
	// Percent: above it the collector runs as often as it needs to stay
	// there (GOMEMLIMIT), so that a large live heap costs CPU, not memory.
	Limit = 2 << 30
)

// Tune sets GOGC=Percent and a soft memory limit of Limit, from TestMain
// before m.Run. A GOGC or GOMEMLIMIT set in the environment wins.
func Tune() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(Limit)
	}
}
