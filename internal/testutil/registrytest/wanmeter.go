package registrytest

import (
	"fmt"
	"time"
)

// LinkIdle is how long the WAN simulator's downstream link (registry and CDN
// to clients) carried nothing although it could have: the capacity its
// bandwidth bucket lost by overflowing, in seconds of the link, split by
// what the simulator was doing meanwhile. The split tells a client that
// kept too little in flight (NoRequest, RoundTrips) from a harness that
// failed to send what was asked (Upstream, Late, Blocked).
type LinkIdle struct {
	// NoRequest: no request was in flight on either host.
	NoRequest time.Duration
	// RoundTrips: requests were in flight, each in its round trip or
	// handshake (the link's latency).
	RoundTrips time.Duration
	// Answering: a request's round trip was over and the simulator was
	// making its answer, no body begun (the registry behind it, the token
	// service or the CDN's redirect at work).
	Answering time.Duration
	// Upstream: response bodies had begun, but none held bytes: the
	// simulator waited for the registry behind it (or for its own goroutines
	// to be scheduled between two chunks).
	Upstream time.Duration
	// Late: a chunk's wait for the link had ended and the simulator had not
	// woken up to send it (timers and scheduling of the process hosting the
	// simulator). The link gives this time back (the late chunks and those
	// after them take it before the bucket's tokens), so Total leaves it
	// out: the simulator's own delays are not the client's.
	Late time.Duration
	// Blocked: a chunk was being written to a client's connection, which
	// did not take it (the client not reading, or the loopback).
	Blocked time.Duration
	// Oversleep is how long the chunks' waits for the link ran past their
	// due time, summed, and OversleepMax the longest one.
	Oversleep, OversleepMax time.Duration
	// Chunks counts the chunks sent.
	Chunks int64
}

// Total is the link's idle time, its late time given back left out.
func (l LinkIdle) Total() time.Duration {
	return l.NoRequest + l.RoundTrips + l.Answering + l.Upstream + l.Blocked
}

// Sub is l less an earlier reading e (OversleepMax is l's).
func (l LinkIdle) Sub(e LinkIdle) LinkIdle {
	return LinkIdle{NoRequest: l.NoRequest - e.NoRequest, RoundTrips: l.RoundTrips - e.RoundTrips, Answering: l.Answering - e.Answering, Upstream: l.Upstream - e.Upstream,
		Late: l.Late - e.Late, Blocked: l.Blocked - e.Blocked, Oversleep: l.Oversleep - e.Oversleep, OversleepMax: l.OversleepMax,
		Chunks: l.Chunks - e.Chunks}
}

func (l LinkIdle) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
	mean := time.Duration(0)
	if l.Chunks > 0 {
		mean = l.Oversleep / time.Duration(l.Chunks)
	}
	return fmt.Sprintf("link idle %s: no request %s, round trips %s, answering %s, body from upstream %s, client not reading %s; simulator late %s (given back); chunk waits overran by %s on average (max %s)",
		ms(l.Total()), ms(l.NoRequest), ms(l.RoundTrips), ms(l.Answering), ms(l.Upstream), ms(l.Blocked), ms(l.Late),
		mean.Round(10*time.Microsecond), l.OversleepMax.Round(10*time.Microsecond))
}

// linkMeter is a bucket's account of its lost capacity. Its counters change
// under the bucket's lock, each change after the bucket has been brought to
// the moment of the change, so what the bucket lost between two changes is
// put down to the state that held between them.
type linkMeter struct {
	requests  int // requests in flight (from arrival to the end of the answer)
	answering int // requests past their round trip whose body has not begun
	bodies    int // answers whose body has begun and not ended
	sleeping  int // chunks waiting for the link
	writing   int // chunks being written to a connection
	lost      [6]float64
	// credit is the capacity lost while a chunk was late, owed back to
	// the chunks (at most maxCredit of the link).
	credit  float64
	over    time.Duration
	overMax time.Duration
	chunks  int64
}

const (
	idleNoRequest = iota
	idleRoundTrips
	idleAnswering
	idleUpstream
	idleLate
	idleBlocked
)

// maxCredit bounds what the link owes late chunks: a second of it.
const maxCredit = time.Second

// overflow puts down n tokens a bucket of rate could not hold.
func (m *linkMeter) overflow(n, rate float64) {
	if m.bodies == 0 {
		m.credit = 0 // no body to send: nothing to give back to
	}
	switch {
	case m.sleeping > 0:
		// A chunk still waits although the bucket is full: its wait is over,
		// and the simulator's lateness is not the client's.
		m.lost[idleLate] += n
		m.credit = min(m.credit+n, maxCredit.Seconds()*rate)
	case m.writing > 0:
		m.lost[idleBlocked] += n
	case m.bodies > 0:
		m.lost[idleUpstream] += n
	case m.answering > 0:
		m.lost[idleAnswering] += n
	case m.requests > 0:
		m.lost[idleRoundTrips] += n
	default:
		m.lost[idleNoRequest] += n
	}
}

// meterEvent changes the meter's counters at now (nil bucket or meter: no-op).
func (b *bucket) meterEvent(now time.Time, f func(m *linkMeter)) {
	if b == nil || b.meter == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	f(b.meter)
}

// idle reads the meter at now.
func (b *bucket) idle(now time.Time) LinkIdle {
	if b == nil || b.meter == nil || b.rate <= 0 {
		return LinkIdle{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	m := b.meter
	sec := func(n float64) time.Duration { return time.Duration(n / b.rate * float64(time.Second)) }
	return LinkIdle{NoRequest: sec(m.lost[idleNoRequest]), RoundTrips: sec(m.lost[idleRoundTrips]), Answering: sec(m.lost[idleAnswering]), Upstream: sec(m.lost[idleUpstream]),
		Late: sec(m.lost[idleLate]), Blocked: sec(m.lost[idleBlocked]), Oversleep: m.over, OversleepMax: m.overMax, Chunks: m.chunks}
}
