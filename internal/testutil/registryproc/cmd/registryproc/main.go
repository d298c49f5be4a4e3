// Command registryproc is a test registry in a process of its own
// (internal/testutil/registryproc): built without the race detector, so that
// the registries a test serves do not pay for it while the code under test,
// in the test process, still does.
//
// Test support only: started by registryproc.Start, never by hand.
package main

import (
	"os"

	"github.com/airlock-mirror/airlock/internal/testutil/registryproc"
)

func main() { os.Exit(registryproc.Main(os.Stdin, os.Stdout, os.Stderr)) }
