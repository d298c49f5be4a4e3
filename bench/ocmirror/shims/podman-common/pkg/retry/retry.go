// Package retry stands in for go.podman.io/common/pkg/retry, which the Go
// module proxy does not serve, so that oc-mirror v2 can be built here for the
// benchmarks (bench/ocmirror/README.md). It is written for this repository and
// has the API oc-mirror uses: Options, IfNecessary and IsErrorRetryable.
package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"syscall"
	"time"
)

// Options says how often and how long apart an operation is retried.
type Options struct {
	// MaxRetry is the number of retries after the first attempt.
	MaxRetry int
	// Delay between attempts; 0 is exponential back-off (1 s, 2 s, 4 s, …).
	Delay time.Duration
	// IsErrorRetryable classifies errors; nil uses this package's IsErrorRetryable.
	IsErrorRetryable func(error) bool
}

// IfNecessary runs operation, and again after a delay while it fails with a
// retryable error, at most options.MaxRetry more times or until ctx ends.
func IfNecessary(ctx context.Context, operation func() error, options *Options) error {
	var o Options
	if options != nil {
		o = *options
	}
	retryable := o.IsErrorRetryable
	if retryable == nil {
		retryable = IsErrorRetryable
	}
	err := operation()
	for attempt := 0; err != nil && retryable(err) && attempt < o.MaxRetry; attempt++ {
		delay := o.Delay
		if delay == 0 {
			delay = time.Duration(math.Pow(2, float64(attempt))) * time.Second
		}
		fmt.Fprintf(os.Stderr, "Warning: failed, retrying in %s ... (%d/%d). Error: %v\n", delay, attempt+1, o.MaxRetry, err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		err = operation()
	}
	return err
}

// IsErrorRetryable reports whether err is a transient network failure worth
// another attempt: a timeout, a refused or reset connection, a broken pipe, a
// truncated stream. Errors that wrap several (errors.Join) are retryable when
// all of them are.
func IsErrorRetryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		for _, e := range errs {
			if !IsErrorRetryable(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return IsErrorRetryable(urlErr.Err)
	}
	return false
}
