package adaptive

import (
	"context"
	"sync"
	"testing"
	"time"
)

// step is one event a Limit sees.
type step struct {
	acquire int           // operations that take a slot
	waiting int           // operations waiting for one meanwhile
	release int           // operations that finish (well, unless failed)
	failed  bool          // the finished operations failed
	trouble bool          // a 429 or 5xx
	latency time.Duration // a time to the first byte of an answer
	answers int           // how many answers took latency (default 1)
	advance time.Duration // the clock moves
	want    int           // the limit after the step
}

func TestLimitAdapts(t *testing.T) {
	cases := []struct {
		name    string
		start   int // 0: New's half of the ceiling
		ceiling int
		steps   []step
	}{
		{"starts at half the ceiling, grows by one per finish while operations wait, up to the ceiling", 0, 20, []step{
			{want: 10},
			{acquire: 10, want: 10},
			{waiting: 1, release: 1, want: 11},
			{acquire: 2, waiting: 5, release: 5, want: 16},
			{acquire: 10, waiting: 8, release: 8, want: 20},
		}},
		{"no growth without operations waiting", 0, 20, []step{
			{acquire: 4, release: 4, want: 10},
		}},
		{"no growth from failed operations", 0, 20, []step{
			{acquire: 10, waiting: 1, release: 10, failed: true, want: 10},
		}},
		{"halves on 429 or 5xx once per cooldown, then grows by one per round", 0, 20, []step{
			{trouble: true, want: 5},
			{trouble: true, want: 5},
			{advance: 2 * time.Second, trouble: true, want: 2},
			{advance: 2 * time.Second, trouble: true, want: 2}, // never below Floor
			{acquire: 2, waiting: 1, release: 2, want: 2},      // 2 + 1/2 + 1/2.5 = 2.9
			{acquire: 2, waiting: 1, release: 2, want: 3},      // 3.55
			{acquire: 3, waiting: 1, release: 3, want: 4},      // 4.34
		}},
		{"a window of far slower answers than the best is trouble", 0, 20, []step{
			{latency: 10 * time.Millisecond, answers: Window, want: 10},
			{latency: 30 * time.Millisecond, answers: Window, want: 10},  // 3× the best
			{latency: 200 * time.Millisecond, answers: Window, want: 10}, // 20×, but within the margin
			{latency: 400 * time.Millisecond, answers: Window, want: 5},
		}},
		{"one fast answer in the window is no queue", 0, 20, []step{
			{latency: 10 * time.Millisecond, answers: Window, want: 10},
			{latency: 400 * time.Millisecond, answers: Window - 2, want: 10},
			{latency: 12 * time.Millisecond, want: 10},
			{latency: 400 * time.Millisecond, answers: 1, want: 10}, // the window ends: its fastest was 12 ms
			{latency: 400 * time.Millisecond, answers: Window - 1, want: 10},
			{latency: 400 * time.Millisecond, answers: 1, want: 5}, // a whole window slow
		}},
		{"new connections' set-up over a far link is not a queue", 0, 20, []step{
			{latency: 150 * time.Millisecond, answers: Window, want: 10},
			{latency: 450 * time.Millisecond, answers: Window, want: 10}, // 3×: round trip + handshake
			{latency: 700 * time.Millisecond, answers: Window, want: 5},  // 4.7×
		}},
		{"a ceiling of one is kept, also after trouble", 0, 1, []step{
			{acquire: 1, waiting: 1, release: 1, want: 1},
			{trouble: true, want: 1},
		}},
		{"an explicit start, grows to the ceiling", 16, 64, []step{
			{want: 16},
			{acquire: 16, waiting: 4, release: 16, want: 32},
			{acquire: 32, waiting: 4, release: 32, want: 64},
			{acquire: 64, waiting: 4, release: 64, want: 64},
		}},
		{"a start above the ceiling is the ceiling", 30, 8, []step{
			{want: 8},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := New(tc.ceiling)
			if tc.start > 0 {
				l = NewFrom(tc.start, tc.ceiling)
			}
			clock := time.Unix(1000, 0)
			l.now = func() time.Time { return clock }
			ctx := context.Background()
			held := 0
			for i, s := range tc.steps {
				clock = clock.Add(s.advance)
				for range s.acquire {
					if err := l.Acquire(ctx); err != nil {
						t.Fatal(err)
					}
					held++
				}
				// One more waits for a slot while the limit is taken.
				if held >= l.Current() {
					wctx, cancel := context.WithTimeout(ctx, time.Millisecond)
					if err := l.Acquire(wctx); err == nil {
						t.Fatalf("step %d: a slot beyond the limit %d", i, l.Current())
					}
					cancel()
				}
				l.mu.Lock()
				l.waiters = s.waiting
				l.mu.Unlock()
				for range s.release {
					held--
					l.Release(!s.failed)
				}
				l.mu.Lock()
				l.waiters = 0
				l.mu.Unlock()
				if s.trouble {
					l.Trouble()
				}
				for range max(s.answers, 1) {
					if s.latency > 0 {
						l.Latency(s.latency)
					}
				}
				if s.want != 0 && l.Current() != s.want {
					t.Fatalf("step %d (%+v): limit %d, want %d", i, s, l.Current(), s.want)
				}
			}
			if st := l.Stats(); st.InUse != held || st.Ceiling != max(tc.ceiling, 1) {
				t.Fatalf("stats %+v: want %d in use, ceiling %d", st, held, tc.ceiling)
			}
		})
	}
}

// TestLimitNeverExceeded runs many operations at once against a Limit that
// grows and is cut meanwhile: no more than the limit of the moment, and never
// more than the ceiling, are ever in flight, and every waiter gets its slot.
func TestLimitNeverExceeded(t *testing.T) {
	const ceiling, workers, rounds = 12, 40, 50
	l := New(ceiling)
	var (
		mu       sync.Mutex
		inFlight int
		bad      string
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := l.Acquire(context.Background()); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inFlight++
				if inFlight > ceiling && bad == "" {
					bad = "more in flight than the ceiling"
				}
				mu.Unlock()
				if (w+r)%97 == 0 {
					l.Trouble()
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
				l.Release(true)
			}
		}()
	}
	wg.Wait()
	if bad != "" {
		t.Fatal(bad)
	}
	if st := l.Stats(); st.InUse != 0 || st.Peak > ceiling {
		t.Fatalf("stats %+v", st)
	}
}

func TestAcquireGivesUpWithTheContext(t *testing.T) {
	l := NewFrom(2, 2)
	ctx := context.Background()
	for range 2 {
		if err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.Acquire(cctx); err != context.Canceled {
		t.Fatalf("Acquire on a cancelled context with the limit taken: %v", err)
	}
	l.Release(true)
	if err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAcquireFirstGoesFirst: a slot that frees goes to an operation waiting
// in AcquireFirst before those waiting in Acquire, whatever the order they
// came in; the others go once none waits first; one that gives up lets them go.
func TestAcquireFirstGoesFirst(t *testing.T) {
	ctx := context.Background()
	l := NewFrom(Floor, Floor)
	for range Floor {
		if err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(waiters, first int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			l.mu.Lock()
			w, f := l.waiters, l.firstWaiters
			l.mu.Unlock()
			if w == waiters && f == first {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiters %d (%d first), want %d (%d)", w, f, waiters, first)
			}
		}
	}
	order := make(chan string, 3)
	go func() { _ = l.Acquire(ctx); order <- "plain" }()
	waitFor(1, 0)
	go func() { _ = l.AcquireFirst(ctx); order <- "first" }()
	waitFor(2, 1)
	l.Release(true) // one slot free (the limit is at its ceiling)
	if got := <-order; got != "first" {
		t.Fatalf("the freed slot went to %q, want the one waiting first", got)
	}
	select {
	case got := <-order:
		t.Fatalf("%q took a slot beyond the limit %d", got, l.Current())
	case <-time.After(20 * time.Millisecond):
	}
	l.Release(true)
	if got := <-order; got != "plain" {
		t.Fatalf("got %q, want the plain waiter once none waits first", got)
	}

	// A first waiter that gives up lets a plain one take a free slot.
	l = NewFrom(Floor, Floor)
	for range Floor {
		_ = l.Acquire(ctx)
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- l.AcquireFirst(cctx) }()
	waitFor(1, 1)
	go func() { _ = l.Acquire(ctx); order <- "plain" }()
	waitFor(2, 1)
	l.mu.Lock()
	l.inUse-- // a slot frees without a wake-up: only the first waiter's leaving may wake the plain one
	l.mu.Unlock()
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("AcquireFirst took a slot after its context ended")
	}
	if got := <-order; got != "plain" {
		t.Fatalf("got %q", got)
	}
}

// TestRaiseCeiling: the ceiling only goes up, and the limit then grows past
// the old one while operations wait and finish well.
func TestRaiseCeiling(t *testing.T) {
	ctx := context.Background()
	l := NewFrom(4, 4)
	l.RaiseCeiling(3)
	if st := l.Stats(); st.Ceiling != 4 {
		t.Fatalf("raised to 3: %+v", st)
	}
	l.RaiseCeiling(8)
	for range 4 {
		_ = l.Acquire(ctx)
	}
	l.mu.Lock()
	l.waiters = 1 // one more operation waits for a slot
	l.mu.Unlock()
	for range 4 {
		l.Release(true)
		_ = l.Acquire(ctx)
	}
	if st := l.Stats(); st.Ceiling != 8 || st.Limit != 8 {
		t.Fatalf("%+v: want the limit grown to the new ceiling 8", st)
	}
}
