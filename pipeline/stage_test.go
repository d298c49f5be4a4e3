package pipeline

import (
	"context"
	"errors"
	"testing"
)

// TestBackground: a stage's background work returns its result to every
// waiter, stops when asked (its context cancelled), and nil is finished
// work with no result.
func TestBackground(t *testing.T) {
	ctx := context.Background()
	gate := make(chan struct{})
	b := goBackground(ctx, func(context.Context) (int, error) {
		<-gate
		return 7, errors.New("probe failed")
	})
	select {
	case <-b.done:
		t.Fatal("finished before its work")
	default:
	}
	close(gate)
	for range 2 {
		if v, err := b.wait(); v != 7 || err == nil || err.Error() != "probe failed" {
			t.Fatalf("wait = %d, %v", v, err)
		}
	}
	started := make(chan struct{})
	s := goBackground(ctx, func(ctx context.Context) (struct{}, error) {
		close(started)
		<-ctx.Done()
		return struct{}{}, ctx.Err()
	})
	<-started
	if _, err := s.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop = %v, want the work's context cancelled", err)
	}
	var none *background[int]
	if v, err := none.wait(); v != 0 || err != nil {
		t.Fatalf("nil wait = %d, %v", v, err)
	}
	if v, err := none.stop(); v != 0 || err != nil {
		t.Fatalf("nil stop = %d, %v", v, err)
	}
}
