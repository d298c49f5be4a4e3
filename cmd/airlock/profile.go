package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startProfile writes a CPU profile of the whole command to the file named by
// $AIRLOCK_CPUPROFILE (for developers: go tool pprof bin/airlock FILE), an
// execution trace to $AIRLOCK_TRACE (go tool trace FILE: which goroutine ran
// or waited when), and a heap profile at the end to $AIRLOCK_MEMPROFILE (what
// the command allocated, -sample_index=alloc_space, and what it still held).
// The returned function stops them.
func startProfile() func() {
	var stops []func()
	if f := create("AIRLOCK_CPUPROFILE"); f != nil {
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "airlock: AIRLOCK_CPUPROFILE:", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if f := create("AIRLOCK_TRACE"); f != nil {
		if err := trace.Start(f); err != nil {
			fmt.Fprintln(os.Stderr, "airlock: AIRLOCK_TRACE:", err)
		} else {
			stops = append(stops, func() { trace.Stop(); f.Close() })
		}
	}
	if f := create("AIRLOCK_MEMPROFILE"); f != nil {
		stops = append(stops, func() {
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fmt.Fprintln(os.Stderr, "airlock: AIRLOCK_MEMPROFILE:", err)
			}
			f.Close()
		})
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// create creates the file named by the environment variable env, if set.
func create(env string) *os.File {
	p := os.Getenv(env)
	if p == "" {
		return nil
	}
	f, err := os.Create(p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock: %s: %v\n", env, err)
		return nil
	}
	return f
}
