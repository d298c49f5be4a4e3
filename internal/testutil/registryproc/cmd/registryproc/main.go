// Command registryproc is a test registry in a process of its own
// (internal/testutil/registryproc): built without the race detector, so that
// the registries a test serves do not pay for it while the code under test,
// in the test process, still does.
//
// Its collector is tuned as the test processes' are (testgc): the registry's
// live heap is a few MiB, and Distribution allocates a 4 MiB read buffer for
// every blob it serves or verifies, so at Go's default the collector ran
// every blob or two.
//
// Test support only: started by registryproc.Start, never by hand.
package main

import (
	"os"

	"github.com/airlock-mirror/airlock/internal/testutil/registryproc"
	"github.com/airlock-mirror/airlock/internal/testutil/testgc"
)

func main() {
	testgc.Tune()
	os.Exit(registryproc.Main(os.Stdin, os.Stdout, os.Stderr))
}
