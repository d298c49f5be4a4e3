package transfer

import "sync"

// StageProgress is told, as a stage goes, how many of its total items are done
// (and how many of those failed). It may be called from several goroutines,
// never at once.
type StageProgress func(done, failed, total int)

// Counter calls a StageProgress under a lock.
type Counter struct {
	mu                  sync.Mutex
	f                   StageProgress
	done, failed, total int
}

// NewCounter reports 0 of total done to f (nil: counts nothing) and returns
// the counter of the stage.
func NewCounter(f StageProgress, total int) *Counter {
	c := &Counter{f: f, total: total}
	if f != nil {
		f(0, 0, total)
	}
	return c
}

// Add counts one item done, failed or not.
func (c *Counter) Add(failed bool) {
	if c.f == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done++
	if failed {
		c.failed++
	}
	c.f(c.done, c.failed, c.total)
}
