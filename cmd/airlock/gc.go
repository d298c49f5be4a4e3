package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Garbage collection policy. Most airlock commands are short and their live
// heap is small (catalog validate of a 14 MB YAML catalog: 8 MB), where Go's
// default (GOGC=100, a 4 MB minimum heap) collects many times for nothing:
// about a tenth of the command's CPU. So while the live heap stays under
// smallHeap, the collector runs at GOGC=400; the first collection that finds
// more switches back to the default for the rest of the process, which keeps
// large catalogs' memory where it was (the heap goal is at most 5 × smallHeap
// before the switch). A GOGC set in the environment wins.
const (
	smallHeap    = 16 << 20
	smallHeapGC  = 400
	defaultGCPct = 100
)

func tuneGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(smallHeapGC)
	watchHeap()
}

// watchHeap checks the live heap after the next collection (a cleanup runs
// once the sentinel is found unreachable) and goes on watching while it is
// small.
func watchHeap() {
	sentinel := new([64]byte) // not a tiny allocation: tiny blocks are freed late
	runtime.AddCleanup(sentinel, func(struct{}) {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > smallHeap {
			debug.SetGCPercent(defaultGCPct)
			return
		}
		watchHeap()
	}, struct{}{})
}
