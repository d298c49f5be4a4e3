package layout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/opencontainers/go-digest"
)

// Following a blob while the layout writes it. A catalog's first run spends
// most of its time inflating the catalog layer; the copy engine writing that
// layer into the workspace's layout is the other big step. A follower lets the
// extraction read the layer from the file the copy engine is writing, as it
// grows, so both steps overlap and the layer is fetched once, by the copy
// engine, under its retry policy. The follower hands out bytes; what reads
// them verifies the digest (a transfer the copy engine retried after a
// corrupted attempt may have handed out bad bytes: the reader's digest check
// fails and the caller reads the committed blob instead).

// errNotWritten ends a follower whose blob the copy never wrote.
var errNotWritten = errors.New("the copy did not write this blob")

// Follower is an io.ReadCloser on one blob of a Destination while
// PutBlob writes it. Read blocks until the writer has written past the reader,
// has committed the blob (then io.EOF at its end), or the follower was ended
// with an error (end).
type Follower struct {
	mu   sync.Mutex
	cond *sync.Cond
	file *os.File // the current attempt's temporary file, opened for reading
	n    int64    // bytes the current attempt has written
	off  int64    // bytes handed to the reader
	done bool     // committed (err == nil) or ended (err != nil)
	err  error
	gone bool // the reader closed the follower
	// attempts counts the writes started; bytes handed out are the committed
	// blob's only when exactly one attempt ran and it was committed (clean).
	attempts int
	broken   bool // an attempt's file could not be opened or read
}

// Clean reports whether what the follower handed out came from the blob as
// committed: one attempt, committed.
func (f *Follower) Clean() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done && f.err == nil && f.attempts == 1 && !f.broken
}

func newFollower() *Follower {
	f := &Follower{}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// attempt starts a new write of the blob into the temporary file at path.
func (f *Follower) attempt(path string) {
	r, err := os.Open(path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.file != nil {
		f.file.Close()
		f.file = nil
	}
	f.n = 0
	f.attempts++
	f.broken = f.broken || err != nil
	if err != nil || f.gone || f.done {
		if r != nil {
			r.Close()
		}
		return
	}
	f.file = r
	f.cond.Broadcast()
}

// wrote records n more bytes written by the current attempt.
func (f *Follower) wrote(n int) {
	f.mu.Lock()
	f.n += int64(n)
	f.mu.Unlock()
	f.cond.Broadcast()
}

// end stops the follower: err nil means the blob was committed (the current
// attempt's file holds all of it), else the reader gets err once it has read
// what was written.
func (f *Follower) end(err error) {
	f.mu.Lock()
	if !f.done {
		f.done, f.err = true, err
	}
	f.mu.Unlock()
	f.cond.Broadcast()
}

func (f *Follower) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	f.mu.Lock()
	for !(f.file != nil && f.n > f.off) && !f.done && !f.gone {
		f.cond.Wait()
	}
	if f.gone {
		f.mu.Unlock()
		return 0, os.ErrClosed
	}
	if f.file == nil || f.n <= f.off {
		err := f.err
		if err == nil && f.file == nil {
			err = errNotWritten
		}
		if err == nil {
			err = io.EOF
		}
		f.mu.Unlock()
		return 0, err
	}
	r, off := f.file, f.off
	if avail := f.n - f.off; int64(len(p)) > avail {
		p = p[:avail]
	}
	f.mu.Unlock()
	// The file may be replaced by a new attempt meanwhile; the bytes read from
	// the old one are what it held, and the reader's digest check decides.
	n, err := r.ReadAt(p, off)
	f.mu.Lock()
	f.off += int64(n)
	f.mu.Unlock()
	if n > 0 {
		return n, nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
		// A new attempt (or Close) closed the file under us: read again.
		return f.Read(p)
	}
	f.mu.Lock()
	f.broken = true
	f.mu.Unlock()
	return 0, err
}

func (f *Follower) Close() error {
	f.mu.Lock()
	f.gone = true
	if f.file != nil {
		f.file.Close()
		f.file = nil
	}
	f.mu.Unlock()
	f.cond.Broadcast()
	return nil
}

// followers are the blobs of a Destination someone follows.
type followers struct {
	mu sync.Mutex
	m  map[digest.Digest]*Follower
}

// Follow returns a reader of blob d that yields its bytes while PutBlob writes
// them (see Follower), or nil when the layout already holds d. Call it
// before the copy that writes d starts; StopFollowing ends every follower the
// copy did not complete (call it once the copy returned, with its error).
func (l *Destination) Follow(d digest.Digest, size int64) (*Follower, error) {
	p, err := layoutBlobPath(l.dir, d)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(p); err == nil && (size <= 0 || st.Size() == size) {
		return nil, nil
	}
	l.followed.mu.Lock()
	defer l.followed.mu.Unlock()
	if l.followed.m == nil {
		l.followed.m = map[digest.Digest]*Follower{}
	}
	f := l.followed.m[d]
	if f != nil {
		return nil, fmt.Errorf("blob %s is already followed", d)
	}
	f = newFollower()
	l.followed.m[d] = f
	return f, nil
}

// StopFollowing ends the followers still waiting: with err (the copy's error)
// or, when nil, errNotWritten for a blob the copy never wrote.
func (l *Destination) StopFollowing(err error) {
	if err == nil {
		err = errNotWritten
	}
	l.followed.mu.Lock()
	defer l.followed.mu.Unlock()
	for d, f := range l.followed.m {
		f.end(err)
		delete(l.followed.m, d)
	}
}

// follower returns the follower of d, if any.
func (l *Destination) follower(d digest.Digest) *Follower {
	l.followed.mu.Lock()
	defer l.followed.mu.Unlock()
	return l.followed.m[d]
}

// committed ends d's follower after PutBlob committed d.
func (l *Destination) committed(d digest.Digest) {
	l.followed.mu.Lock()
	f := l.followed.m[d]
	delete(l.followed.m, d)
	l.followed.mu.Unlock()
	if f != nil {
		f.end(nil)
	}
}

// followWriter tells a follower about each write of an attempt.
type followWriter struct {
	w io.Writer
	f *Follower
}

func (w followWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if n > 0 {
		w.f.wrote(n)
	}
	return n, err
}
