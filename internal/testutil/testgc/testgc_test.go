package testgc

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTune sets GOGC and the memory limit unless the environment sets them.
func TestTune(t *testing.T) {
	pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(pct); debug.SetMemoryLimit(limit) })
	for _, tc := range []struct {
		gogc, memlimit string
		wantPct        int
		wantLimit      int64
	}{
		{"", "", Percent, Limit},
		{"100", "", 77, Limit},
		{"", "1GiB", Percent, 123},
		{"off", "1GiB", 77, 123},
	} {
		t.Setenv("GOGC", tc.gogc)
		t.Setenv("GOMEMLIMIT", tc.memlimit)
		debug.SetGCPercent(77)
		debug.SetMemoryLimit(123)
		Tune()
		if got := debug.SetGCPercent(77); got != tc.wantPct {
			t.Errorf("GOGC=%q: percent %d, want %d", tc.gogc, got, tc.wantPct)
		}
		if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
			t.Errorf("GOMEMLIMIT=%q: limit %d, want %d", tc.memlimit, got, tc.wantLimit)
		}
	}
}
