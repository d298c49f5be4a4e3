package transfer

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/airlock-mirror/airlock/mirror/retry"
)

// hostLimit bounds the blob transfers touching one registry host at once, and
// adapts the bound to what the host and the link take, between minLimit and a
// ceiling (Options.MaxPerRegistry):
//
//   - it grows while transfers wait for a slot and finish well: by one for
//     each transfer that finishes until the first sign of trouble (doubling
//     per round of transfers, so a link where each transfer is bound by round
//     trips, not bandwidth, soon has enough of them in flight), then by one per
//     round (each finished transfer adds 1/limit);
//   - it halves when the host answers 429 Too Many Requests or a 5xx (the
//     retry policy honours Retry-After), at most once per cooldown, and when
//     the host starts answering far slower than it did at best (the time to
//     the first byte of a blob read above slowFactor times the best seen and
//     slowMargin more): a queue building up at the host or on the link.
//
// It starts at the ceiling's half (and at least minLimit): the default
// ceiling is what the engine used as a fixed bound before.
type hostLimit struct {
	mu       sync.Mutex
	limit    float64
	ceiling  float64
	inUse    int
	wake     chan struct{} // closed when a slot may have become free
	waiters  int           // transfers waiting for a slot
	growing  bool          // no trouble yet: grow by one per finish
	lastCut  time.Time
	bestTTFB time.Duration
	now      func() time.Time
}

const (
	minLimit   = 2
	cooldown   = time.Second
	slowFactor = 4
	slowMargin = 250 * time.Millisecond
)

func newHostLimit(ceiling int) *hostLimit {
	ceiling = max(ceiling, 1)
	start := max(min(minLimit, ceiling), ceiling/2)
	return &hostLimit{limit: float64(start), ceiling: float64(ceiling), wake: make(chan struct{}), growing: true, now: time.Now}
}

// acquire waits for a slot.
func (h *hostLimit) acquire(ctx context.Context) error {
	for {
		h.mu.Lock()
		if h.inUse < int(h.limit) {
			h.inUse++
			h.mu.Unlock()
			return nil
		}
		h.waiters++
		ch := h.wake
		h.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		h.mu.Lock()
		h.waiters--
		h.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// release frees a slot; ok says the transfer finished well.
func (h *hostLimit) release(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inUse--
	if ok && h.waiters > 0 && h.limit < h.ceiling {
		if h.growing {
			h.limit++
		} else {
			h.limit += 1 / h.limit
		}
		h.limit = min(h.limit, h.ceiling)
	}
	close(h.wake)
	h.wake = make(chan struct{})
}

// trouble halves the limit (once per cooldown).
func (h *hostLimit) trouble() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if now.Sub(h.lastCut) < cooldown {
		return
	}
	h.lastCut = now
	h.growing = false
	h.limit = max(float64(minLimit), h.limit/2)
}

// firstByte records how long a blob read took to start answering; one far
// slower than the best seen is trouble.
func (h *hostLimit) firstByte(d time.Duration) {
	h.mu.Lock()
	best := h.bestTTFB
	if best == 0 || d < best {
		h.bestTTFB = d
	}
	h.mu.Unlock()
	if best > 0 && d > slowFactor*best && d > best+slowMargin {
		h.trouble()
	}
}

// current is the limit now (tests, the report).
func (h *hostLimit) current() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int(h.limit)
}

// throttledHost returns the host of a 429 or 5xx answer in err ("" if none).
func throttledHost(err error) string {
	var se *retry.StatusError
	if !errors.As(err, &se) || (se.StatusCode != http.StatusTooManyRequests && se.StatusCode < 500) {
		return ""
	}
	u, perr := url.Parse(se.URL)
	if perr != nil {
		return ""
	}
	return u.Host
}
