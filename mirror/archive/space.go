package archive

import (
	"errors"
	"fmt"
	"os"

	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// ErrNoSpace is returned (wrapped) by CheckSpace when the archive's
// filesystem cannot take what the run will write.
var ErrNoSpace = errors.New("not enough free space for the archive")

// ToWrite is how many bytes of blob d the Writer has still to write: 0 when
// it is staged, shipped by an earlier batch or written by another shard
// (WriterOptions.Elsewhere), else its size less what an
// interrupted transfer left of it (resumed, not written again).
func (w *Writer) ToWrite(d endpoint.Descriptor) int64 {
	w.mu.Lock()
	_, staged := w.blobs[d.Digest]
	_, shipped := w.shipped[d.Digest]
	w.mu.Unlock()
	_, elsewhere := w.elsewhere[d.Digest]
	if staged || shipped || elsewhere {
		return 0
	}
	w.mu.Lock()
	held, inSlot := w.slotHeld[d.Digest]
	w.mu.Unlock()
	if inSlot && held <= d.Size {
		return d.Size - held
	}
	if info, err := os.Stat(w.partialPath(d.Digest)); err == nil && info.Size() <= d.Size {
		return d.Size - info.Size()
	}
	return d.Size
}

// CheckSpace refuses, before anything is staged, a run whose blobs do not fit
// on the archive's filesystem: toWrite is what the run will stage (ToWrite,
// summed over distinct blobs). The blobs laid out before the copy (Expect)
// are written once, into their chunks; staged blobs move into the archive's
// chunks at the end, one chunk at a time (docs/archive.md, "Disk use while
// writing"): the filesystem needs toWrite plus one chunk free, an allowance
// for a chunk written again from the staging area. The error gives the numbers, the folder and
// skip, the flag that goes on anyway. A system whose free space cannot be
// read is not refused.
func (w *Writer) CheckSpace(toWrite int64, skip string) error {
	if toWrite <= 0 {
		return nil
	}
	free, err := w.free(w.staging)
	if err != nil {
		w.log.Debug("free space of the archive's filesystem unknown: not checked", "dir", w.dir, "error", err.Error())
		return nil
	}
	need := toWrite + min(w.chunkSize, toWrite)
	if need <= free {
		return nil
	}
	return fmt.Errorf("%w: the batch %s needs %s free (%s of blobs still to fetch and stage, plus one archive file of %s while the archive files are written), and its filesystem has %s: free %s, or give another folder, or go on anyway with %s",
		ErrNoSpace, w.dir, humanize.Bytes(need), humanize.Bytes(toWrite), humanize.Bytes(min(w.chunkSize, toWrite)), humanize.Bytes(free), humanize.Bytes(need-free), skip)
}
