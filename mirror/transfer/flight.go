package transfer

import "context"

type copyFlight struct {
	done chan struct{}
	err  error
	sent bool // this flight transferred bytes or pushed a manifest
	// cancelled: the leader's context ended (set before done is closed).
	cancelled bool
}

// flight runs f once per key; other callers wait for (and share) its result.
func (e *copyEngine) flight(ctx context.Context, m map[string]*copyFlight, key string, f func() (bool, error)) (leader bool, sent bool, err error) {
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
	if fl.err != nil && ctx.Err() != nil {
		// Cancelled (the run, or the leader's image timed out): do not cache, a
		// later caller may retry.
		fl.cancelled = true
		e.mu.Lock()
		delete(m, key)
		e.mu.Unlock()
	}
	close(fl.done)
	return true, fl.sent, fl.err
}
