package pipeline

import "context"

// background is work a stage starts to run beside the stages that follow it
// (the registry probes beside the catalog stage, a catalog's rebuild beside
// planning, the dry run's reading beside the rebuild): the stage that needs its
// result waits for it (wait, any number of times), and a run that fails stops
// it (stop). It is the orchestrator's one way of running stages at once.
// A nil background is finished work with no result.
type background[T any] struct {
	cancel context.CancelFunc
	done   chan struct{}
	val    T
	err    error
}

// goBackground starts f in a goroutine with a context of its own, derived
// from ctx; the background's stop cancels it.
func goBackground[T any](ctx context.Context, f func(context.Context) (T, error)) *background[T] {
	ctx, cancel := context.WithCancel(ctx)
	b := &background[T]{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		defer cancel()
		b.val, b.err = f(ctx)
	}()
	return b
}

// wait waits for the work's end and returns its result.
func (b *background[T]) wait() (T, error) {
	if b == nil {
		var zero T
		return zero, nil
	}
	<-b.done
	return b.val, b.err
}

// stop cancels the work and waits for its end (nothing keeps reading or
// writing after the run).
func (b *background[T]) stop() (T, error) {
	if b == nil {
		var zero T
		return zero, nil
	}
	b.cancel()
	return b.wait()
}
