package registrytest

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Clock is time as the WAN simulator sees it: the real one, or in the
// simulator's own tests a fake one whose Sleep only moves its time on, so that
// what the link charges is checked by accounting, not by a stopwatch.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or less when ctx ends first (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// bucket is a token bucket: rate tokens a second flow in, at most burst are
// held. The link's bandwidth caps are buckets of bytes shared by every
// connection (each chunk a connection sends takes its bytes and waits its
// turn: the debt of earlier takers delays later ones, as on one shared
// link); the request-rate limit is a bucket of requests.
type bucket struct {
	mu     sync.Mutex
	rate   float64 // tokens a second; 0 or less: unlimited
	burst  float64
	tokens float64
	last   time.Time
	primed bool
	meter  *linkMeter // nil: the lost capacity is not accounted
}

func newBucket(rate, burst float64) *bucket { return &bucket{rate: rate, burst: burst} }

// refill brings the bucket to now (the caller holds mu).
func (b *bucket) refill(now time.Time) {
	if !b.primed {
		b.tokens, b.last, b.primed = b.burst, now, true
		return
	}
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens += dt.Seconds() * b.rate
		if over := b.tokens - b.burst; over > 0 {
			if b.meter != nil {
				b.meter.overflow(over, b.rate)
			}
			b.tokens = b.burst
		}
		b.last = now
	}
}

// take removes n tokens at now, going into debt when the bucket holds fewer,
// and returns how long the taker must wait until its tokens have flowed in.
func (b *bucket) take(now time.Time, n float64) time.Duration {
	if b == nil || b.rate <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(now, n)
}

// takeLocked is take for a caller holding mu.
func (b *bucket) takeLocked(now time.Time, n float64) time.Duration {
	b.refill(now)
	if m := b.meter; m != nil && m.credit > 0 {
		use := min(m.credit, n)
		m.credit -= use
		n -= use
	}
	b.tokens -= n
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// allow removes one token at now when the bucket holds one; otherwise it
// removes nothing and says how long until one has flowed in (a Retry-After).
func (b *bucket) allow(now time.Time) (bool, time.Duration) {
	if b == nil || b.rate <= 0 {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// linkChunk is the most a connection sends before taking its bytes from the
// link's bucket again: small enough that connections interleave, large enough
// that the waits are not dominated by timer granularity.
const linkChunk = 64 << 10

// pace charges n bytes to b and waits for them.
func pace(ctx context.Context, clk Clock, b *bucket, n int) error {
	if d := b.take(clk.Now(), float64(n)); d > 0 {
		return clk.Sleep(ctx, d)
	}
	return nil
}

// paceChunk is pace for a metered bucket's chunk: the chunk counts as
// waiting for the link until its wait is over, then as being written until
// the caller says it was (written).
func paceChunk(ctx context.Context, clk Clock, b *bucket, n int) error {
	if b == nil || b.meter == nil {
		return pace(ctx, clk, b, n)
	}
	now := clk.Now()
	var d time.Duration
	b.meterEvent(now, func(m *linkMeter) {
		if d = b.takeLocked(now, float64(n)); d > 0 {
			m.sleeping++
		} else {
			m.writing++
		}
	})
	if d <= 0 {
		return nil
	}
	err := clk.Sleep(ctx, d)
	woke := clk.Now()
	b.meterEvent(woke, func(m *linkMeter) {
		m.sleeping--
		m.writing++
		over := max(0, woke.Sub(now)-d)
		m.over += over
		m.overMax = max(m.overMax, over)
		m.chunks++
	})
	return err
}

// written ends a chunk paceChunk let through.
func (b *bucket) written(now time.Time) {
	b.meterEvent(now, func(m *linkMeter) { m.writing-- })
}

// pacedWriter sends a response body over the link: each chunk takes its bytes
// from the downstream bucket and waits for them before it is written.
type pacedWriter struct {
	http.ResponseWriter
	ctx   context.Context
	clk   Clock
	b     *bucket
	count func(int64)
	begun bool // the body's first byte was written (the meter counts it)
}

func (w *pacedWriter) Write(p []byte) (int, error) {
	if !w.begun && len(p) > 0 {
		w.begun = true
		w.b.meterEvent(w.clk.Now(), func(m *linkMeter) { m.answering--; m.bodies++ })
	}
	done := 0
	for len(p) > 0 {
		n := min(len(p), linkChunk)
		if err := paceChunk(w.ctx, w.clk, w.b, n); err != nil {
			w.b.written(w.clk.Now())
			return done, err
		}
		m, err := w.ResponseWriter.Write(p[:n])
		w.b.written(w.clk.Now())
		done += m
		w.count(int64(m))
		if err != nil {
			return done, err
		}
		p = p[n:]
	}
	return done, nil
}

// answer starts the answer for the meter (its round trip is over); end
// ends it.
func (w *pacedWriter) answer() {
	w.b.meterEvent(w.clk.Now(), func(m *linkMeter) { m.answering++ })
}

func (w *pacedWriter) end() {
	w.b.meterEvent(w.clk.Now(), func(m *linkMeter) {
		if w.begun {
			m.bodies--
		} else {
			m.answering--
		}
	})
}

func (w *pacedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *pacedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// pacedReader receives a request body over the link: what is read takes its
// bytes from the upstream bucket and waits for them.
type pacedReader struct {
	r     io.ReadCloser
	ctx   context.Context
	clk   Clock
	b     *bucket
	count func(int64)
}

func (r *pacedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p[:min(len(p), linkChunk)])
	if n > 0 {
		r.count(int64(n))
		if perr := pace(r.ctx, r.clk, r.b, n); perr != nil {
			return n, perr
		}
	}
	return n, err
}

func (r *pacedReader) Close() error { return r.r.Close() }
