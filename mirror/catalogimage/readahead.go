package catalogimage

import (
	"errors"
	"io"
	"sync"
)

// aheadReader reads its source on a goroutine of its own, up to a few blocks
// ahead of its consumer, so that what reading costs (system calls, hashing in
// a verifier) runs beside the consumer instead of on its goroutine. The
// source's error (io.EOF at its end) comes after the data read before it.
type aheadReader struct {
	full chan []byte // blocks read, in order; closed after the last
	free chan []byte // blocks the consumer is done with
	stop chan struct{}
	done chan struct{} // closed when the goroutine returned
	once sync.Once

	cur   []byte // unread part of the current block
	block []byte // the current block, to hand back
	err   error  // the source's error, set before full is closed
}

func newAheadReader(r io.Reader, size, blocks int) *aheadReader {
	a := &aheadReader{
		full: make(chan []byte, blocks),
		free: make(chan []byte, blocks),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	for range blocks {
		a.free <- make([]byte, size)
	}
	go a.run(r)
	return a
}

func (a *aheadReader) run(r io.Reader) {
	defer close(a.done)
	defer close(a.full)
	for {
		var buf []byte
		select {
		case buf = <-a.free:
		case <-a.stop:
			a.err = errClosedAhead
			return
		}
		// One Read: what the source has now goes to the consumer now (a
		// follower of a blob being copied hands out what has arrived).
		n, err := r.Read(buf)
		if n > 0 {
			select {
			case a.full <- buf[:n]:
			case <-a.stop:
				a.err = errClosedAhead
				return
			}
		}
		if n == 0 {
			a.free <- buf
		}
		if err != nil {
			a.err = err
			return
		}
	}
}

var errClosedAhead = errors.New("read-ahead closed")

func (a *aheadReader) Read(p []byte) (int, error) {
	if len(a.cur) == 0 {
		if a.block != nil {
			a.free <- a.block[:cap(a.block)]
			a.block = nil
		}
		b, ok := <-a.full
		if !ok {
			return 0, a.err // written before full was closed
		}
		a.cur, a.block = b, b
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// Close stops the goroutine and waits for it (its source may then be closed).
// Call it once the source can no longer block forever (closed, or at its end).
func (a *aheadReader) Close() {
	a.once.Do(func() { close(a.stop) })
	<-a.done
}
