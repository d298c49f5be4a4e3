package archive

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// The payload hash of a chunk laid out before the copy, computed during it.
//
// A chunk's index records the SHA-256 of its blob region (headers, blobs,
// padding, from the chunk's first byte). Computed only when Finish seals the
// chunk, it read every byte of the archive back after the last one arrived:
// over a WAN, seconds of disk and CPU after the link went quiet. Instead each
// pre-laid chunk keeps a running hash of the region up to its first blob not
// yet in its slot (its frontier); whenever a blob lands in its slot, the
// frontier moves over every blob from there that is in place (verified this
// run), reading those bytes back while they are still in the page cache and
// while the copy goes on. When Finish seals the chunk, the hash usually covers
// the whole region: nothing is read back. Blobs an earlier process wrote
// (unverified until Finish verifies them) stop the frontier; Finish hashes
// from there. The hash, and so the chunk, is byte for byte the one Finish
// computed before.

// regionHash is the running payload hash of one pre-laid chunk.
type regionHash struct {
	// pending: a blob landed since the holder of mu last looked.
	pending atomic.Bool
	mu      sync.Mutex
	h       hash.Hash
	next    int   // the chunk's Blobs[:next] are hashed with their headers and padding
	pos     int64 // bytes hashed: where the entry of Blobs[next] starts
}

// regionOf returns pre-laid chunk c's running hash, made on first use (lock
// held).
func (w *Writer) regionOf(number int) *regionHash {
	if w.regions == nil {
		w.regions = map[int]*regionHash{}
	}
	r := w.regions[number]
	if r == nil {
		r = &regionHash{h: sha256.New()}
		w.regions[number] = r
	}
	return r
}

// advanceRegion moves the frontier of the pre-laid chunk holding slot s over
// the blobs in place from it. Only one caller hashes a chunk at a time; one
// that finds the chunk taken leaves the work to it (the holder looks again
// before it lets go), so a transfer never waits for another's hashing.
func (w *Writer) advanceRegion(s slot) {
	w.mu.Lock()
	number, ok := w.ownNumber(s.chunk)
	var c *preChunk
	if ok && number >= 1 && number <= len(w.pre) {
		c = &w.pre[number-1]
	}
	if c == nil || len(c.Blobs) == 0 || w.preSize != w.chunkSize || w.finished {
		w.mu.Unlock()
		return
	}
	r := w.regionOf(number)
	r.pending.Store(true)
	w.mu.Unlock()
	for r.pending.Load() && r.mu.TryLock() {
		r.pending.Store(false)
		err := w.hashRun(r, number)
		r.mu.Unlock()
		if err != nil {
			w.log.Debug("payload hash of a chunk left to Finish", "chunk", s.chunk, "error", err)
			return
		}
	}
}

// hashRun hashes, from r's frontier, the blobs of pre-laid chunk number that
// are in place; r.mu is held.
func (w *Writer) hashRun(r *regionHash, number int) error {
	w.mu.Lock()
	c := w.pre[number-1]
	name := w.chunkName(number)
	end, next := r.pos, r.next
	for next < len(c.Blobs) {
		b := c.Blobs[next]
		sb := w.blobs[b.Digest]
		if sb == nil || sb.unverified || sb.chunk != name || sb.offset != b.Offset {
			break
		}
		end = b.Offset + b.Size + padding(b.Size)
		next++
	}
	w.mu.Unlock()
	if next == r.next {
		return nil
	}
	f, err := os.Open(filepath.Join(w.dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyBuffer(r.h, io.NewSectionReader(f, r.pos, end-r.pos), make([]byte, min(end-r.pos, 1<<20)))
	if err != nil || n != end-r.pos {
		// The hash no longer matches any prefix: Finish starts over.
		r.h, r.next, r.pos = sha256.New(), 0, 0
		return fmt.Errorf("read back %d of %d bytes: %v", n, end-r.pos, err)
	}
	r.next, r.pos = next, end
	return nil
}

// regionFrom returns the payload hash of pre-laid chunk number computed so far
// and how many bytes of its region it covers (a fresh hash and 0 when none);
// the chunk's running hash is dropped.
func (w *Writer) regionFrom(number int) (hash.Hash, int64) {
	w.mu.Lock()
	r := w.regions[number]
	delete(w.regions, number)
	w.mu.Unlock()
	if r == nil {
		return sha256.New(), 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h, r.pos
}
