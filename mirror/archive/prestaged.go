package archive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// Blobs staged before the layout.
//
// A mirror-to-disk run may start fetching blobs while its plan is still being
// made (a prefetch), before it knows every blob and can lay the chunks out
// (Expect). Those blobs are staged; Expect then gives them slots like the
// others (the layout depends only on the blobs named, so the chunks are the
// ones a run without a prefetch writes) and moves them into their slots in
// the background, verifying them again, while the copy goes on; Finish and
// Close wait for that move. A blob whose move fails stays staged and Finish
// writes its chunk again from the staging area (fixedChunks).
//
// Until Expect, the bytes staged are bounded (BoundStaging) by what the
// archive's filesystem had free, less the allowance CheckSpace keeps, so that
// staging ahead of the space check never fills the disk; CheckSpace counts
// those blobs as written (ToWrite).

// prestage is the Writer's state about blobs staged before the layout.
type prestage struct {
	bounded  bool  // BoundStaging was called and Expect not yet
	budget   int64 // bytes StartBlob may still let through while bounded
	held     int64 // bytes refused while bounded (for the log)
	cancel   context.CancelFunc
	done     chan struct{} // closed when the move into slots is over
	moved    int           // blobs moved into their slots
	notMoved int           // blobs left staged
}

// BoundStaging bounds, until Expect lays the chunks out, the bytes of the
// blobs staged by StartBlob to what the archive's filesystem has free now
// less one chunk (CheckSpace's allowance for a chunk written again), or less
// half of it when a chunk is larger than that (the default archive size,
// 500 GiB, would otherwise leave nothing to stage): a blob past that is
// refused with ErrNoSpace before any of its bytes is read, and is fetched by
// the copy once the space check has passed. So a run whose batch does not fit
// is refused with at least min(one chunk, half the free space) still free.
// A filesystem whose free space cannot be read bounds nothing. It returns the
// bound (-1: none).
func (w *Writer) BoundStaging() int64 {
	free, err := w.free(w.staging)
	if err != nil {
		return -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pres.bounded = true
	w.pres.budget = max(free-min(w.chunkSize, free/2), 0)
	return w.pres.budget
}

// reserve takes d's bytes from the bound of BoundStaging (lock held): an
// error when they do not fit.
func (w *Writer) reserve(d endpoint.Descriptor) error {
	if !w.pres.bounded {
		return nil
	}
	if _, slotted := w.slots[d.Digest]; slotted {
		return nil
	}
	if d.Size > w.pres.budget {
		w.pres.held += d.Size
		return fmt.Errorf("blob %s (%s) not staged before the space check: %s of the free space is left for blobs fetched ahead: %w", d.Digest, humanize.Bytes(d.Size), humanize.Bytes(w.pres.budget), ErrNoSpace)
	}
	w.pres.budget -= d.Size
	return nil
}

// unbound lifts the bound of BoundStaging (lock held): the space check has
// been made.
func (w *Writer) unbound() {
	if w.pres.bounded && w.pres.held > 0 {
		w.log.Debug("blobs held back before the space check", "bytes", w.pres.held)
	}
	w.pres.bounded = false
}

// stagedToMove are the blobs of blobs that are staged, not in a chunk, and
// have a slot (lock held): Expect moves them into their slots.
func (w *Writer) stagedToMove(blobs []endpoint.Descriptor) []digest.Digest {
	var out []digest.Digest
	seen := map[digest.Digest]bool{}
	for _, b := range blobs {
		sb, staged := w.blobs[b.Digest]
		s, slotted := w.slots[b.Digest]
		if staged && sb.chunk == "" && slotted && s.size == sb.size && !seen[b.Digest] {
			seen[b.Digest] = true
			out = append(out, b.Digest)
		}
	}
	return out
}

// startMove moves the staged blobs ds into their slots in the background
// (lock held). One move runs at a time: a later Expect's waits for the one
// before.
func (w *Writer) startMove(ds []digest.Digest) {
	if len(ds) == 0 {
		return
	}
	before := w.pres.done
	ctx, stop := context.WithCancel(context.Background())
	cancel := stop
	if prev := w.pres.cancel; prev != nil {
		cancel = func() { prev(); stop() }
	}
	done := make(chan struct{})
	w.pres.cancel, w.pres.done = cancel, done
	go func() {
		defer close(done)
		if before != nil {
			<-before
		}
		moved, left := 0, 0
		for _, d := range ds {
			if ctx.Err() != nil {
				left += len(ds) - moved - left
				break
			}
			if err := w.moveStaged(ctx, d); err != nil {
				left++
				w.log.Debug("staged blob left in the staging area: its chunk is written again at the end", "digest", d, "error", err)
				continue
			}
			moved++
		}
		w.mu.Lock()
		w.pres.moved += moved
		w.pres.notMoved += left
		w.mu.Unlock()
	}()
}

// moveStaged writes staged blob d into its slot (verified again on the way)
// and removes its staged copy. A blob another transfer is writing, or one
// without a slot, is left as it is.
func (w *Writer) moveStaged(ctx context.Context, d digest.Digest) error {
	path, release := w.claimPartial(d)
	defer release()
	if path == "" {
		return nil // another caller moves it (settle) or writes it
	}
	w.mu.Lock()
	sb, staged := w.blobs[d]
	s, slotted := w.slots[d]
	w.mu.Unlock()
	if !staged || sb.chunk != "" || !slotted {
		return nil // moved or placed meanwhile
	}
	return w.stagedIntoSlot(ctx, s, endpoint.Descriptor{Digest: d, Size: sb.size}, w.stagedPath(d))
}

// settle moves blob d into its slot when it is staged and has one: a blob
// whose staging ended while Expect laid the chunks out, after Expect looked
// for the staged blobs to move. Else it does nothing.
func (w *Writer) settle(ctx context.Context, d digest.Digest) error {
	w.mu.Lock()
	sb, staged := w.blobs[d]
	s, slotted := w.slots[d]
	w.mu.Unlock()
	if !staged || sb.chunk != "" || !slotted || s.size != sb.size {
		return nil
	}
	if err := w.moveStaged(ctx, d); err != nil {
		w.log.Debug("staged blob left in the staging area: its chunk is written again at the end", "digest", d, "error", err)
	}
	return nil
}

// stagedIntoSlot writes the verified blob d held in file path into its slot s
// (writeSlot: verified again, recorded placed, the staged copy removed).
func (w *Writer) stagedIntoSlot(ctx context.Context, s slot, d endpoint.Descriptor, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("blob %s: %w", d.Digest, err)
	}
	defer f.Close()
	if err := w.writeSlot(ctx, s, d, f, 0, nil); err != nil {
		return err
	}
	_ = os.Remove(path) // toSlot removed the staged copy; path may be the partial file
	return nil
}

// slotHolds reports whether blob d's slot holds its first n bytes (an
// interrupted transfer's, recorded "held").
func (w *Writer) slotHolds(d digest.Digest, n int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.slotHeld[d] == n
}

// waitMove waits for the move into slots Expect started, if any; with stop,
// it stops it first (what is not moved stays staged).
func (w *Writer) waitMove(stop bool) {
	w.mu.Lock()
	cancel, done := w.pres.cancel, w.pres.done
	w.mu.Unlock()
	if done == nil {
		return
	}
	if stop {
		cancel()
	}
	<-done
}

// StagedBeforeLayout says how many blobs staged before the layout Expect
// moved into their slots, and how many are left in the staging area, once the
// move is over (it waits for it).
func (w *Writer) StagedBeforeLayout() (moved, left int) {
	w.waitMove(false)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pres.moved, w.pres.notMoved
}

// Empty reports whether the Writer holds nothing of a batch: no blob staged,
// placed or partly fetched, no chunk laid out. A batch folder holding only
// such an empty staging area carries nothing an interrupted run fetched.
func (w *Writer) Empty() bool {
	w.mu.Lock()
	empty := len(w.blobs) == 0 && len(w.pre) == 0 && len(w.writing) == 0 && w.completed == nil
	w.mu.Unlock()
	if !empty {
		return false
	}
	ents, err := os.ReadDir(filepath.Join(w.staging, partialDirName))
	return err == nil && len(ents) == 0
}

// RemoveIfEmpty removes the archive folder of a closed Writer that holds
// nothing (Empty): its staging area, then the folder itself unless something
// else is in it.
func (w *Writer) RemoveIfEmpty() error {
	w.mu.Lock()
	open := w.journal != nil
	w.mu.Unlock()
	if open || !w.Empty() {
		return nil
	}
	if err := os.RemoveAll(w.staging); err != nil {
		return err
	}
	_ = os.Remove(w.dir) // kept when something else is in it
	return nil
}
