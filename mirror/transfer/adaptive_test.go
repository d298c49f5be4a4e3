package transfer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/mirror/retry"
)

// step is one event a host limit sees.
type step struct {
	acquire int           // transfers that take a slot
	waiting int           // transfers waiting for one meanwhile
	release int           // transfers that finish (well, unless failed)
	failed  bool          // the finished transfers failed
	trouble bool          // a 429 or 5xx
	ttfb    time.Duration // a blob read's time to first byte
	advance time.Duration // the clock moves
	want    int           // the limit after the step
}

func TestHostLimitAdapts(t *testing.T) {
	cases := []struct {
		name    string
		ceiling int
		steps   []step
	}{
		{"starts at half the ceiling, grows by one per finish while transfers wait, up to the ceiling", 20, []step{
			{want: 10},
			{acquire: 10, want: 10},
			{waiting: 1, release: 1, want: 11},
			{acquire: 2, waiting: 5, release: 5, want: 16},
			{acquire: 10, waiting: 8, release: 8, want: 20},
		}},
		{"no growth without transfers waiting", 20, []step{
			{acquire: 4, release: 4, want: 10},
		}},
		{"no growth from failed transfers", 20, []step{
			{acquire: 10, waiting: 1, release: 10, failed: true, want: 10},
		}},
		{"halves on 429 or 5xx once per cooldown, then grows by one per round", 20, []step{
			{trouble: true, want: 5},
			{trouble: true, want: 5},
			{advance: 2 * time.Second, trouble: true, want: 2},
			{advance: 2 * time.Second, trouble: true, want: 2}, // never below minLimit
			{acquire: 2, waiting: 1, release: 2, want: 2},      // 2 + 1/2 + 1/2.5 = 2.9
			{acquire: 2, waiting: 1, release: 2, want: 3},      // 3.55
			{acquire: 3, waiting: 1, release: 3, want: 4},      // 4.34
		}},
		{"far slower first bytes than the best are trouble", 20, []step{
			{ttfb: 10 * time.Millisecond, want: 10},
			{ttfb: 30 * time.Millisecond, want: 10},  // 3× the best
			{ttfb: 200 * time.Millisecond, want: 10}, // 20×, but within the margin
			{ttfb: 400 * time.Millisecond, want: 5},
		}},
		{"a ceiling of one is kept", 1, []step{
			{acquire: 1, waiting: 1, release: 1, want: 1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostLimit(tc.ceiling)
			clock := time.Unix(1000, 0)
			h.now = func() time.Time { return clock }
			ctx := context.Background()
			held := 0
			for i, s := range tc.steps {
				clock = clock.Add(s.advance)
				for range s.acquire {
					if err := h.acquire(ctx); err != nil {
						t.Fatal(err)
					}
					held++
				}
				// One more waits for a slot while the limit is taken.
				if held >= h.current() {
					wctx, cancel := context.WithTimeout(ctx, time.Millisecond)
					if err := h.acquire(wctx); err == nil {
						t.Fatalf("step %d: a slot beyond the limit %d", i, h.current())
					}
					cancel()
				}
				h.mu.Lock()
				h.waiters = s.waiting
				h.mu.Unlock()
				for range s.release {
					held--
					h.release(!s.failed)
				}
				h.mu.Lock()
				h.waiters = 0
				h.mu.Unlock()
				if s.trouble {
					h.trouble()
				}
				if s.ttfb > 0 {
					h.firstByte(s.ttfb)
				}
				if s.want != 0 && h.current() != s.want {
					t.Fatalf("step %d (%+v): limit %d, want %d", i, s, h.current(), s.want)
				}
			}
		})
	}
}

func TestThrottledHost(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{retry.NewStatusError("GET", "http://src.example:5000/v2/a/blobs/sha256:1", 429, "", "1"), "src.example:5000"},
		{fmt.Errorf("wrapped: %w", retry.NewStatusError("PUT", "https://dst.example/v2/a/blobs/uploads/x", 503, "", "")), "dst.example"},
		{retry.NewStatusError("GET", "http://src.example/v2/a/blobs/sha256:1", 404, "", ""), ""},
		{fmt.Errorf("connection reset"), ""},
	} {
		if got := throttledHost(tc.err); got != tc.want {
			t.Errorf("throttledHost(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
