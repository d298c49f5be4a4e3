// Package adaptive is airlock's one adaptive concurrency limit (Limit): how
// many operations may run at once against one registry host, grown while
// work waits and operations go well, cut when the host shows it is
// overloaded, between a floor and a configurable ceiling. A host has one: the
// registry client keeps it (mirror/registry) and counts its requests in
// flight under it, and the copy engine (mirror/transfer) counts its blob
// transfers to and from the host under the same one (endpoint.HostLimit).
//
// It knows nothing of HTTP, registries, blobs or the copy engine: callers
// say when an operation starts and ends, whether it went well, when the host
// answered "too many requests" or failed (Trouble), and how long the host
// took to start answering (Latency).
package adaptive

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Limit bounds the operations touching one host at once, and adapts the bound
// to what the host and the link take, between Floor and a ceiling:
//
//   - it grows while operations wait for a slot and finish well: by one for
//     each operation that finishes until the first sign of trouble (doubling
//     per round of operations, so a link where each operation is bound by
//     round trips, not bandwidth, soon has enough of them in flight), then by
//     one per round (each finished operation adds 1/limit);
//   - it halves on Trouble (a 429 Too Many Requests or a 5xx: the retry
//     policy honours Retry-After), at most once per Cooldown, and when the
//     host starts answering far slower than it did at best (the fastest of
//     Window answers above SlowFactor times the best seen and SlowMargin
//     more): a queue building up at the host or on the link.
//
// It starts at the ceiling's half (and at least Floor). A Limit is safe for
// concurrent use.
type Limit struct {
	mu           sync.Mutex
	limit        float64
	ceiling      float64
	inUse        int
	wake         chan struct{} // closed when a slot may have become free
	waiters      int           // operations waiting for a slot
	firstWaiters int           // the part of waiters in AcquireFirst
	growing      bool          // no trouble yet: grow by one per finish
	lastCut      time.Time
	best         time.Duration // the fastest answer seen
	recentMin    time.Duration // the fastest of the recent answers
	recent       int           // recent answers (up to Window)
	peak         int           // the most operations in flight at once
	grows, cuts  int
	now          func() time.Time
	log          *slog.Logger
	what         string
}

const (
	// Floor is the least a Limit is cut to (or its ceiling, when lower).
	Floor = 2
	// Cooldown is the least time between two cuts: one burst of 429s or one
	// slow round is one sign, not many.
	Cooldown = time.Second
	// SlowFactor, SlowMargin and Window say when answers show a queue: the
	// fastest of Window answers in a row took more than SlowFactor times the
	// best seen and SlowMargin more than it (a new connection's set-up, a few
	// round trips, is not).
	SlowFactor = 4
	SlowMargin = 250 * time.Millisecond
	Window     = 16
)

// New returns a Limit with the given ceiling (at least 1), starting at half of
// it.
func New(ceiling int) *Limit {
	return NewFrom(max(Floor, ceiling/2), ceiling)
}

// NewFrom returns a Limit with the given ceiling (at least 1) starting at
// start (between Floor and the ceiling).
func NewFrom(start, ceiling int) *Limit {
	ceiling = max(ceiling, 1)
	start = min(max(start, Floor), ceiling)
	return &Limit{limit: float64(start), ceiling: float64(ceiling), wake: make(chan struct{}), growing: true, now: time.Now}
}

// Acquire waits for a slot, or until ctx ends (then it returns ctx.Err()).
// It gives way to operations waiting in AcquireFirst.
func (l *Limit) Acquire(ctx context.Context) error { return l.acquire(ctx, false) }

// AcquireFirst is Acquire for an operation that goes before those waiting in
// Acquire: a slot that frees goes to it first.
func (l *Limit) AcquireFirst(ctx context.Context) error { return l.acquire(ctx, true) }

func (l *Limit) acquire(ctx context.Context, first bool) error {
	l.mu.Lock()
	waiting := false
	for {
		if l.inUse < int(l.limit) && (first || l.firstWaiters == 0) {
			l.inUse++
			l.peak = max(l.peak, l.inUse)
			if waiting {
				l.stopWaiting(first)
			}
			l.mu.Unlock()
			return nil
		}
		if !waiting {
			waiting = true
			l.waiters++
			if first {
				l.firstWaiters++
			}
		}
		ch := l.wake
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			l.mu.Lock()
			l.stopWaiting(first)
			l.mu.Unlock()
			return ctx.Err()
		}
		l.mu.Lock()
	}
}

// stopWaiting counts a waiter out; l.mu is held. When the last operation
// waiting in AcquireFirst stops, those that gave way look again.
func (l *Limit) stopWaiting(first bool) {
	l.waiters--
	if first {
		l.firstWaiters--
		if l.firstWaiters == 0 {
			l.wakeAll()
		}
	}
}

// wakeAll wakes every waiter to look again; l.mu is held.
func (l *Limit) wakeAll() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// Release frees a slot taken by Acquire; ok says the operation went well.
func (l *Limit) Release(ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inUse--
	if ok && l.waiters > 0 && l.limit < l.ceiling {
		before := int(l.limit)
		if l.growing {
			l.limit++
		} else {
			l.limit += 1 / l.limit
		}
		l.limit = min(l.limit, l.ceiling)
		if int(l.limit) > before {
			l.grows++
		}
	}
	l.wakeAll()
}

// RaiseCeiling lifts the ceiling to n when it is lower (the copy engine
// asks for room for its --parallel-images × --parallel-layers transfers).
func (l *Limit) RaiseCeiling(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ceiling = max(l.ceiling, float64(n))
}

// Logged makes the Limit write its cuts to log at debug level, naming it what
// ("blob transfers to quay.io"); it returns l.
func (l *Limit) Logged(log *slog.Logger, what string) *Limit {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log, l.what = log, what
	return l
}

// Trouble halves the limit (at most once per Cooldown): the host answered
// 429 or a 5xx.
func (l *Limit) Trouble() { l.cut("the host answered 429 or a 5xx") }

func (l *Limit) cut(why string) {
	l.mu.Lock()
	now := l.now()
	if !l.lastCut.IsZero() && now.Sub(l.lastCut) < Cooldown {
		l.mu.Unlock()
		return
	}
	from := int(l.limit)
	l.lastCut = now
	l.growing = false
	l.limit = max(min(Floor, l.ceiling), l.limit/2)
	l.cuts++
	to, log, what := int(l.limit), l.log, l.what
	l.mu.Unlock()
	if log != nil {
		log.Debug("adaptive limit cut", "what", what, "from", from, "to", to, "why", why)
	}
}

// Latency records how long the host took to start answering an operation
// (the time to a response's headers, to a blob's first byte). When even the
// fastest of the last Window answers was far slower than the best seen, a
// queue is building up at the host or on the link: Trouble. One slow answer
// (a new connection's set-up, a pause of a loaded machine) is not.
func (l *Limit) Latency(d time.Duration) {
	if d <= 0 {
		return
	}
	l.mu.Lock()
	if l.best == 0 || d < l.best {
		l.best = d
	}
	if l.recent == 0 || d < l.recentMin {
		l.recentMin = d
	}
	l.recent++
	best, fastest, slow := l.best, l.recentMin, false
	if l.recent >= Window {
		slow = fastest > SlowFactor*best && fastest > best+SlowMargin
		l.recent = 0
	}
	l.mu.Unlock()
	if slow {
		l.cut(fmt.Sprintf("the fastest of %d answers took %v, the best %v", Window, fastest.Round(time.Millisecond), best.Round(time.Millisecond)))
	}
}

// Stats is what a Limit did, for logs and tests.
type Stats struct {
	// Limit is the bound now, Ceiling the most it may grow to.
	Limit, Ceiling int
	// InUse are the operations in flight now, Peak the most at once.
	InUse, Peak int
	// Grows and Cuts count the times the bound went up (by at least one)
	// and was halved.
	Grows, Cuts int
}

// Stats returns what the Limit did so far.
func (l *Limit) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Limit: int(l.limit), Ceiling: int(l.ceiling), InUse: l.inUse, Peak: l.peak, Grows: l.grows, Cuts: l.cuts}
}

// Current is the limit now.
func (l *Limit) Current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.limit)
}

// Spare reports whether the Limit has a slot nobody waits for (fewer
// operations in flight and waiting than the limit), and a channel closed when
// that may change (the next Release): a caller deciding whether to start more
// work (the copy engine starting another image) waits on it.
func (l *Limit) Spare() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inUse+l.waiters < int(l.limit), l.wake
}
