// Command airlock mirrors OLM operator catalogs and container images into
// disconnected clusters. This package only parses flags and calls library functions:
// it knows no FBC field and no HTTP (docs/architecture.md).
package main

import (
	"context"
	"errors"
	"fmt"
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
