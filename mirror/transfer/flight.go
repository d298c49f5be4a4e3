package transfer

import (
	"context"
	"errors"
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

type copyFlight struct {
	done chan struct{}
	err  error
	sent bool // this flight transferred bytes or pushed a manifest
	// cancelled: the leader's context ended (set before done is closed).
	cancelled bool
}

// flight runs f once per key; other callers wait for (and share) its result.
// A provisional flight's failure is not shared either (a prefetch: Prefetch):
// the next caller tries again itself.
func (e *copyEngine) flight(ctx context.Context, m map[string]*copyFlight, key string, provisional bool, f func() (bool, error)) (leader bool, sent bool, err error) {
	var fl *copyFlight
	for fl == nil {
		e.mu.Lock()
		cur, ok := m[key]
		if !ok {
			fl = &copyFlight{done: make(chan struct{})}
			m[key] = fl
		}
		e.mu.Unlock()
		if !ok {
			break
		}
		select {
		case <-cur.done:
			if !cur.cancelled || ctx.Err() != nil {
				return false, false, cur.err
			}
			// The leader's image ran out of time, not this one: take over.
		case <-ctx.Done():
			return false, false, ctx.Err()
		}
	}
	fl.sent, fl.err = f()
	if fl.err != nil && (ctx.Err() != nil || provisional) {
		// Cancelled (the run, or the leader's image timed out), or only a
		// prefetch: do not cache, a later caller may retry.
		fl.cancelled = true
		e.mu.Lock()
		delete(m, key)
		e.mu.Unlock()
	}
	close(fl.done)
	return true, fl.sent, fl.err
}

// refusedForGood reports whether err is a registry's 4xx answer that another
// attempt would not change (not 408 or 429, and not a body altered on the way).
func refusedForGood(err error) bool {
	code := endpoint.StatusOf(err)
	if code == 0 || errors.Is(err, retry.ErrContentRejected) {
		return false
	}
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// forEach runs f(0..n-1) with at most ParallelLayers at once; the first error is
// returned after the others have finished (siblings are not cancelled, so that
// shared blobs still land for other images).
func (e *copyEngine) forEach(ctx context.Context, n int, f func(int) error) error {
	var g errgroup.Group
	g.SetLimit(e.opts.ParallelLayers)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		g.Go(func() error { return f(i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}
