package archive

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// A mirror-to-disk target folder holds a sequence of batches, one per run:
//
//	TARGET/batch-0001/airlock_000001.tar …   the first (full) archive
//	TARGET/batch-0002/airlock_000001.tar …   an incremental one, built on batch 1
//	TARGET/working-dir/archive-state.json    what the batches shipped
//
// Each batch is a complete archive directory (Open reads it). A finished batch is
// never written again: the next run starts the next batch. A run that was
// interrupted before its batch was finished resumes into that batch. Each batch's
// manifest records its number and the batches it builds on, so that disk-to-mirror
// can check they were loaded first.

const batchPrefix = "batch-"

var batchNameRE = regexp.MustCompile(`^batch-([0-9]{4,})$`)

// BatchName returns the folder name of batch n (1-based): batch-0001.
func BatchName(n int) string { return fmt.Sprintf("%s%04d", batchPrefix, n) }

// BatchNumber parses a batch folder name; ok is false for other names.
func BatchNumber(name string) (int, bool) { return numberIn(batchNameRE, name) }

// BatchRef names an earlier batch of the same sequence.
type BatchRef struct {
	// Batch is the batch number (1 is the first of the sequence).
	Batch int `json:"batch"`
	// ArchiveID is the ID of that batch's archive.
	ArchiveID string `json:"archiveID"`
	// Dir is where that batch was written (informative: it was carried elsewhere).
	Dir string `json:"dir,omitempty"`
}

// String is "batch-0002 (archive 25bdd0f…)".
func (b BatchRef) String() string {
	id := b.ArchiveID
	if b.Batch == 0 {
		return "archive " + id
	}
	return fmt.Sprintf("%s (archive %s)", BatchName(b.Batch), id)
}

// BatchDir is one batch folder of a target.
type BatchDir struct {
	Number int
	Dir    string
	// Finished is true when the batch holds a finished archive (chunks and no
	// staging area of an interrupted run).
	Finished bool
}

// ErrLegacyLayout means a mirror-to-disk target holds an archive written directly
// into it (the layout before batches).
var ErrLegacyLayout = errors.New("folder holds an archive without batches")

// Batches lists the batch folders of target, in order. A missing target has none.
func Batches(target string) ([]BatchDir, error) {
	ents, err := os.ReadDir(target)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read archive folder: %w", err)
	}
	var out []BatchDir
	for _, e := range ents {
		n, ok := BatchNumber(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		dir := filepath.Join(target, e.Name())
		chunks, err := listChunks(dir)
		if err != nil {
			return nil, err
		}
		_, serr := os.Stat(filepath.Join(dir, stagingDirName))
		out = append(out, BatchDir{Number: n, Dir: dir, Finished: len(chunks) > 0 && serr != nil})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, nil
}

// NextBatch returns the folder the next mirror-to-disk into target writes: the
// last batch when it is unfinished (an interrupted run resumes into it), else a
// new batch numbered after the last. It creates nothing. A target holding chunks
// of its own (an archive written without batches) is refused: it is never
// rewritten.
func NextBatch(target string) (dir string, number int, resume bool, err error) {
	if chunks, err := listChunks(target); err == nil && len(chunks) > 0 {
		return "", 0, false, fmt.Errorf("%s: %w (%s …): it is never rewritten; write the next archive into a new folder, with --since-archive %s to ship only what it did not carry", target, ErrLegacyLayout, chunks[0], target)
	}
	bs, err := Batches(target)
	if err != nil {
		return "", 0, false, err
	}
	if len(bs) == 0 {
		return filepath.Join(target, BatchName(1)), 1, false, nil
	}
	last := bs[len(bs)-1]
	if !last.Finished {
		return last.Dir, last.Number, true, nil
	}
	n := last.Number + 1
	return filepath.Join(target, BatchName(n)), n, false, nil
}

// finishedBatches returns the finished batch folders of dir, in order; self is
// true when dir itself holds chunks (an archive folder, not a target).
func finishedBatches(dir string) (self bool, done []string, err error) {
	if chunks, err := listChunks(dir); err == nil && len(chunks) > 0 {
		return true, nil, nil
	}
	bs, err := Batches(dir)
	if err != nil {
		return false, nil, err
	}
	for _, b := range bs {
		if b.Finished {
			done = append(done, b.Dir)
		}
	}
	return false, done, nil
}

// ResolveArchiveDir returns the archive folder dir names for reading: dir itself
// when it holds chunks, else its only finished batch. A target with several
// batches is ambiguous: the error lists them, in the order to load them.
func ResolveArchiveDir(dir string) (string, error) {
	self, done, err := finishedBatches(dir)
	switch {
	case err != nil:
		return "", err
	case self || len(done) == 0:
		return dir, nil // Open says what is wrong, if anything
	case len(done) == 1:
		return done[0], nil
	}
	return "", fmt.Errorf("%s holds %d batches; name one batch folder (they are, in order: %s); archive verify and disk-to-mirror --from read them all", dir, len(done), strings.Join(done, ", "))
}

// ResolveLatest returns dir itself when it holds chunks, else its last finished
// batch (for --since-archive TARGET).
func ResolveLatest(dir string) (string, error) {
	self, done, err := finishedBatches(dir)
	if err != nil || self || len(done) == 0 {
		return dir, err
	}
	return done[len(done)-1], nil
}
