package pipeline

import (
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// What only this package's tests may set (package pipeline_test reaches them
// here; product code cannot): the retry policy and the registry timeouts,
// shortened so that a test of a failing registry ends in milliseconds.

// SetRetry replaces the retry policy Network.RetryTimes makes (its backoff too).
func SetRetry(o *Options, p *retry.Policy) { o.retry = p }

// SetTimeouts replaces how long a registry may stay silent.
func SetTimeouts(o *Options, t registry.Timeouts) { o.timeouts = t }

// SetFreeSpace replaces how the archive's free space is read: what a disk too
// small for the plan reports, without filling a disk.
func SetFreeSpace(o *Options, free func(path string) (int64, error)) { o.freeSpace = free }

// SetNoPrefetch makes the run copy only once its plan is final.
func SetNoPrefetch(o *Options) { o.noPrefetch = true }
