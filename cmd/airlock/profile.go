package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the whole command to the file named by
// $AIRLOCK_CPUPROFILE (for developers: go tool pprof bin/airlock FILE). The
// returned function stops it.
func startProfile() func() {
	p := os.Getenv("AIRLOCK_CPUPROFILE")
	if p == "" {
		return func() {}
	}
	f, err := os.Create(p)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "airlock: AIRLOCK_CPUPROFILE:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
