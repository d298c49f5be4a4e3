// Command airlock mirrors OLM operator catalogs and container images into
// disconnected clusters. This package only parses flags and calls library functions:
// it knows no FBC field and no HTTP (docs/architecture.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/airlock-mirror/airlock/pipeline"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	tuneGC()
	stopProfile := startProfile()
	root := newRootCmd()
	root.SetArgs(MirrorArgs(root, os.Args[1:]))
	err := root.ExecuteContext(ctx)
	stopProfile()
	interrupted := ctx.Err() != nil
	stop()
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(os.Stderr, "airlock:", ee.msg)
			}
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "airlock:", err)
		if interrupted {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// The exit codes of airlock mirror (docs/exit-codes.md).
const (
	// exitFailed: the run stopped (a refused configuration, an unreachable
	// registry, an archive that does not verify).
	exitFailed = 1
	// exitPartial: the run finished but some images were not mirrored:
	// results.json lists them with what to do. A mirror-to-disk batch may be
	// written without them (pipeline.ErrPartial; the summary's archive: line
	// says), or not (--all-or-nothing, a full disk, a failed catalog).
	exitPartial = 2
)

// exitCode maps a mirror run's error to its exit code.
func exitCode(err error) int {
	if errors.Is(err, pipeline.ErrIncomplete) { // ErrPartial too
		return exitPartial
	}
	return exitFailed
}
