package archive

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Chunks laid out before the copy.
//
// When the caller knows the blobs a run is about to write (Expect: the
// layers and configs its manifests reference, read before the copy), the
// Writer lays them out in chunks at once, in digest order and within the
// chunk size as Finish lays out staged blobs, creates each chunk file at the
// size of its blob region with every blob's tar header in place, and writes
// each blob's bytes into its slot as they arrive (at its offset), verified by
// digest before the blob counts, and handed to the kernel's writeback as it
// is written. Each such chunk's blob region is hashed while its blobs arrive
// (slothash.go), and Finish appends its index and trailer: those bytes are
// written once and read back at most once, during the copy.
// Blobs the caller did not name (the manifests, images built during the run,
// attachments found while copying) are staged as before, and Finish lays them
// out in chunks after these.
//
// The layout is recorded in the staging area (layout.json), and each blob
// written into its slot in the journal ("placed"), so that an interrupted run
// keeps them; a blob cut off midway records how many of its bytes are in its
// slot ("held"), and its next transfer hashes them back and asks for the rest.

// preLayoutName is the staging area's record of the chunks laid out before the copy.
const preLayoutName = "layout.json"

// preLayout is layout.json.
type preLayout struct {
	// ChunkSize is the chunk size the chunks were laid out for: a run with
	// another size lays its blobs out again.
	ChunkSize int64      `json:"chunkSize"`
	Chunks    []preChunk `json:"chunks"`
}

// preChunk is a chunk laid out before the copy: its blobs in digest order,
// each Offset where the blob's bytes start. A chunk whose blobs went back to
// the staging area (dissolve) has none: its number is free for Finish.
type preChunk struct {
	Number      int         `json:"number"`
	PayloadSize int64       `json:"payloadSize"`
	Blobs       []IndexBlob `json:"blobs"`
}

// slot is where a blob of a pre-laid chunk goes.
type slot struct {
	chunk  string // the chunk file's name
	offset int64
	size   int64
}

// preReserve is the room each pre-laid chunk keeps for the index and the
// archive manifest that the first and the last chunk carry, for n blobs: an
// estimate (the manifest is known only at Finish), bounded by an eighth of
// the chunk size. Finish lays the blobs out again when it was too small.
func preReserve(n int, chunkSize int64) int64 {
	return min(1<<20+int64(n)*2048, chunkSize/8)
}

// Expect lays out, before the copy, chunks for the blobs the run is about to
// write (layers, configs, and the manifests as blobs of their own, each with
// its media type: a shard keeps its manifests in its record, not in its
// chunks): every blob of blobs not held yet (written, shipped by an earlier
// batch or written by another shard) gets a slot in a chunk file created now,
// and its bytes are written there when it arrives; a blob staged already
// (fetched before the layout: prestaged.go) gets its slot too and is moved
// there in the background. It lifts the bound of BoundStaging. Calling it is
// optional (a blob without a slot is staged), and it may be called more than
// once: later calls lay out new chunks. With Strict, a blob larger than the
// chunk size is refused here, before anything is fetched. It does nothing once Finish has been
// interrupted (its chunks are kept as they are).
func (w *Writer) Expect(blobs []endpoint.Descriptor) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return ErrFinished
	}
	w.unbound() // the space check is made
	if w.completed != nil && len(w.completed.Chunks) > 0 {
		return nil
	}
	if len(w.pre) > 0 && w.preSize != w.chunkSize {
		return nil // laid out for another chunk size: Finish lays them out again
	}
	_, _, shard := parsePart(w.part)
	seen := map[digest.Digest]bool{}
	var todo []endpoint.Descriptor
	for _, b := range blobs {
		if validBlob(b) != nil || seen[b.Digest] || (shard && oci.IsManifestType(b.MediaType)) {
			continue
		}
		seen[b.Digest] = true
		// A blob staged before the layout (prestaged.go) gets its slot and
		// is moved there; one in a chunk already is held.
		sb, staged := w.blobs[b.Digest]
		held := staged && sb.chunk != ""
		_, shipped := w.shipped[b.Digest]
		_, slotted := w.slots[b.Digest]
		// A manifest is written into every batch, even one an earlier batch
		// shipped (Finish): it gets its slot too.
		if shipped && oci.IsManifestType(b.MediaType) {
			shipped = false
		}
		if !held && !shipped && !slotted && !w.elsewhere.Has(b.Digest) {
			todo = append(todo, b)
		}
	}
	if len(todo) == 0 {
		w.startMove(w.stagedToMove(blobs)) // staged by an interrupted run, laid out by it
		return nil
	}
	slices.SortFunc(todo, func(a, b endpoint.Descriptor) int {
		if a.Digest < b.Digest {
			return -1
		}
		if a.Digest > b.Digest {
			return 1
		}
		return 0
	})
	if w.strict {
		for _, b := range todo { // refused before anything is fetched
			ib, _ := json.Marshal(IndexBlob{Digest: b.Digest, Size: b.Size, Offset: math.MaxInt64})
			if hl, err := headerLen(b); err != nil || hl+b.Size+padding(b.Size)+indexEntryBound(int64(len(ib)), 1)+eofSize > w.chunkSize {
				return w.strictErr(b.Digest, b.Size)
			}
		}
	}
	reserve := preReserve(len(todo), w.chunkSize)
	first := len(w.pre)
	cur := preChunk{Number: first + 1}
	var entriesLen int64
	for _, b := range todo {
		hl, err := headerLen(b)
		if err != nil {
			return err
		}
		entryLen := hl + b.Size + padding(b.Size)
		ib, _ := json.Marshal(IndexBlob{Digest: b.Digest, Size: b.Size, Offset: math.MaxInt64})
		if w.strict && entryLen+indexEntryBound(int64(len(ib)), 1)+reserve+eofSize > w.chunkSize {
			continue // staged: Finish decides with the archive manifest's real size
		}
		fits := cur.PayloadSize+entryLen+indexEntryBound(entriesLen+int64(len(ib)), len(cur.Blobs)+1)+reserve+eofSize <= w.chunkSize
		if !fits && len(cur.Blobs) > 0 {
			w.pre = append(w.pre, cur)
			cur = preChunk{Number: cur.Number + 1}
			entriesLen = 0
		}
		cur.Blobs = append(cur.Blobs, IndexBlob{Digest: b.Digest, Size: b.Size, Offset: cur.PayloadSize + hl})
		cur.PayloadSize += entryLen
		entriesLen += int64(len(ib))
	}
	if len(cur.Blobs) > 0 {
		w.pre = append(w.pre, cur)
	}
	if len(w.pre) > maxChunkCount {
		w.pre = w.pre[:first]
		return fmt.Errorf("archive needs more than %d chunks: raise the archive size", maxChunkCount)
	}
	w.preSize = w.chunkSize
	if err := w.savePreLayout(); err != nil {
		return err
	}
	for _, c := range w.pre[first:] {
		if err := w.createPreChunk(c, true); err != nil {
			return err
		}
	}
	w.startMove(w.stagedToMove(blobs))
	return nil
}

// headerLen is the length of blob b's tar header.
func headerLen(b endpoint.Descriptor) (int64, error) {
	h, err := headerBytes(blobEntryName(b.Digest), b.Size)
	return int64(len(h)), err
}

// savePreLayout writes layout.json and indexes the slots (lock held).
func (w *Writer) savePreLayout() error {
	w.slots = map[digest.Digest]slot{}
	for _, c := range w.pre {
		for _, b := range c.Blobs {
			w.slots[b.Digest] = slot{chunk: w.chunkName(c.Number), offset: b.Offset, size: b.Size}
		}
	}
	b, err := marshal(preLayout{ChunkSize: w.preSize, Chunks: w.pre})
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(w.staging, preLayoutName), b)
}

// createPreChunk makes chunk c's file the size of its blob region with every
// blob's tar header at its place: fresh (its bytes zero) when fresh is set,
// else keeping what it holds (a resumed run: the headers are written again,
// in case the run stopped before they were).
func (w *Writer) createPreChunk(c preChunk, fresh bool) error {
	name := w.chunkName(c.Number)
	flags := os.O_CREATE | os.O_WRONLY
	if fresh {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(filepath.Join(w.dir, name), flags, 0o644)
	if err != nil {
		return fmt.Errorf("create chunk %s: %w", name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("chunk %s: %w", name, err)
	}
	if info.Size() < c.PayloadSize {
		if err := f.Truncate(c.PayloadSize); err != nil {
			return fmt.Errorf("chunk %s: %w", name, err)
		}
	}
	for _, b := range c.Blobs {
		h, err := headerBytes(blobEntryName(b.Digest), b.Size)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(h, b.Offset-int64(len(h))); err != nil {
			return fmt.Errorf("write chunk %s: %w", name, err)
		}
	}
	return f.Close()
}

// loadPreLayout reads layout.json of an interrupted run (no file: nothing was
// laid out) and makes sure its chunk files are there.
func (w *Writer) loadPreLayout() error {
	path := filepath.Join(w.staging, preLayoutName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	l, err := parsePreLayout(b)
	if err != nil {
		return fmt.Errorf("%s: %w; remove the directory %s to start over", path, err, w.staging)
	}
	w.pre, w.preSize = l.Chunks, l.ChunkSize
	w.slots = map[digest.Digest]slot{}
	for _, c := range w.pre {
		for _, b := range c.Blobs {
			w.slots[b.Digest] = slot{chunk: w.chunkName(c.Number), offset: b.Offset, size: b.Size}
		}
		if len(c.Blobs) > 0 {
			if err := w.createPreChunk(c, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// parsePreLayout reads layout.json and checks it: chunks numbered from 1, in
// order, each blob a valid digest once, at an offset after its header and
// within its chunk's blob region, after the blob before it.
func parsePreLayout(b []byte) (*preLayout, error) {
	var l preLayout
	if err := strictUnmarshal(b, &l); err != nil {
		return nil, err
	}
	if l.ChunkSize <= 0 || len(l.Chunks) > maxChunkCount {
		return nil, fmt.Errorf("chunk size %d, %d chunks: not a layout this airlock wrote", l.ChunkSize, len(l.Chunks))
	}
	seen := map[digest.Digest]bool{}
	for i, c := range l.Chunks {
		if c.Number != i+1 || c.PayloadSize < 0 {
			return nil, fmt.Errorf("chunk %d is numbered %d, blob region %d bytes", i+1, c.Number, c.PayloadSize)
		}
		var end int64
		for _, x := range c.Blobs {
			if err := validDigest(x.Digest); err != nil {
				return nil, err
			}
			if seen[x.Digest] {
				return nil, fmt.Errorf("blob %s laid out twice", x.Digest)
			}
			seen[x.Digest] = true
			hl, err := headerLen(endpoint.Descriptor{Digest: x.Digest, Size: x.Size})
			if err != nil || x.Size < 0 || x.Offset-hl < end || x.Size > c.PayloadSize-x.Offset {
				return nil, fmt.Errorf("blob %s at offset %d, %d bytes, does not fit chunk %d", x.Digest, x.Offset, x.Size, c.Number)
			}
			end = x.Offset + x.Size + padding(x.Size)
		}
		if end > c.PayloadSize {
			return nil, fmt.Errorf("chunk %d: blobs end at %d, after its blob region", c.Number, end)
		}
	}
	return &l, nil
}

// slotOf returns blob d's slot, if it has one and d's size is the slot's.
func (w *Writer) slotOf(d endpoint.Descriptor) (slot, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.slots[d.Digest]
	return s, ok && s.size == d.Size
}

// errSlotFull is a stream longer than its blob's slot.
var errSlotFull = errors.New("more bytes than the descriptor says")

// writebackEvery is how many bytes a slot writer lets pile up in the page
// cache before it asks the kernel to start writing them out
// (startWriteback): the disk writes the archive while the copy goes on,
// instead of all of it in the fsync that seals the chunk after the last byte.
const writebackEvery = 8 << 20

// writeback is startWriteback (a variable for tests).
var writeback = startWriteback

// slotWriter writes a blob's bytes into its slot of a chunk file, never past it.
type slotWriter struct {
	f       *os.File
	at, end int64
	dirty   int64 // where the bytes not yet handed to writeback start
}

func (s *slotWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > s.end-s.at {
		return 0, errSlotFull
	}
	n, err := s.f.WriteAt(p, s.at)
	s.at += int64(n)
	if s.at-s.dirty >= writebackEvery {
		s.flush()
	}
	return n, err
}

// flush hands the bytes written since the last flush to the kernel's
// writeback.
func (s *slotWriter) flush() {
	writeback(s.f, s.dirty, s.at-s.dirty)
	s.dirty = s.at
}

// writeSlot writes blob d into its slot s from byte off (0, or the bytes its
// slot holds, whose SHA-256 state h is), verifies it, and records it placed;
// a transfer that breaks records how many bytes the slot holds, one that does
// not verify that it holds none.
func (w *Writer) writeSlot(ctx context.Context, s slot, d endpoint.Descriptor, r io.Reader, off int64, h hash.Hash) error {
	if h == nil || off == 0 {
		h, off = sha256.New(), 0
	}
	f, err := os.OpenFile(filepath.Join(w.dir, s.chunk), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write blob %s into chunk %s: %w", d.Digest, s.chunk, err)
	}
	sw := &slotWriter{f: f, at: s.offset + off, end: s.offset + s.size, dirty: s.offset + off}
	v, verified := r.(*oci.Verifier)
	verified = verified && v.Covers(d, off)
	var sink io.Writer = io.MultiWriter(sw, h)
	if verified {
		sink = sw // the reader verifies the whole blob: not hashed twice
	}
	_, err = io.CopyBuffer(sink, &ctxReader{ctx, io.LimitReader(r, d.Size-off+1)}, make([]byte, stageBufSize(d.Size-off+1)))
	sw.flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	held := sw.at - s.offset
	switch {
	case errors.Is(err, errSlotFull):
		err = fmt.Errorf("blob %s: %w: %w", d.Digest, errSlotFull, ErrCorrupt)
		held = 0
	case err != nil:
		if errors.Is(err, oci.ErrDigestMismatch) {
			held = 0 // the held bytes may be what is wrong: start over
		}
		err = fmt.Errorf("write blob %s into chunk %s: %w", d.Digest, s.chunk, err)
	case held != d.Size:
		err = fmt.Errorf("blob %s: read %d bytes, descriptor says %d: %w", d.Digest, held, d.Size, ErrCorrupt)
		held = 0
	case verified && !v.Verified():
		err = fmt.Errorf("blob %s: its content was not verified to the end: %w", d.Digest, ErrCorrupt)
		held = 0
	case !verified && digest.NewDigest(digest.SHA256, h) != d.Digest:
		err = fmt.Errorf("blob %s: content has digest %s: %w", d.Digest, digest.NewDigest(digest.SHA256, h), ErrCorrupt)
		held = 0
	}
	w.mu.Lock()
	if err != nil {
		w.slotHeld[d.Digest] = held
		jerr := w.writeJournal(journalRecord{Op: "held", Digest: d.Digest, Size: held})
		w.mu.Unlock()
		if jerr != nil && !errors.Is(jerr, ErrFinished) {
			return errors.Join(err, jerr)
		}
		return err
	}
	delete(w.slotHeld, d.Digest)
	w.toSlot(d.Digest, s, false)
	err = w.writeJournal(journalRecord{Op: "placed", Digest: d.Digest, Size: d.Size})
	w.mu.Unlock()
	if err == nil {
		w.advanceRegion(s)
	}
	return err
}

// slotHeldHash reads back the bytes blob d's slot holds into a SHA-256 state.
func (w *Writer) slotHeldHash(s slot, d digest.Digest, n int64) (hash.Hash, error) {
	f, err := os.Open(filepath.Join(w.dir, s.chunk))
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d, err)
	}
	defer f.Close()
	h := sha256.New()
	got, err := io.Copy(h, io.NewSectionReader(f, s.offset, n))
	if err != nil || got != n {
		return nil, fmt.Errorf("blob %s: read back %d of the %d bytes chunk %s holds: %v", d, got, n, s.chunk, err)
	}
	return h, nil
}

// placed records (lock held) that the journal says blob d is in its slot,
// written by an earlier process: Finish verifies it again before it counts.
func (w *Writer) placed(d digest.Digest) {
	if s, ok := w.slots[d]; ok {
		delete(w.slotHeld, d)
		w.toSlot(d, s, true)
	}
}

// toSlot records (lock held) that blob d is in its slot s. The slot wins
// over a staged copy a concurrent transfer of d made (removed), so that the
// chunk laid out before the copy stays whole; a blob already in a chunk
// (an interrupted Finish's) stays there.
func (w *Writer) toSlot(d digest.Digest, s slot, unverified bool) {
	b, ok := w.blobs[d]
	if ok && b.chunk != "" {
		return
	}
	repos := map[string]struct{}{}
	if ok {
		repos = b.repos
		_ = os.Remove(w.stagedPath(d))
	}
	w.blobs[d] = &stagedBlob{size: s.size, repos: repos, chunk: s.chunk, offset: s.offset, unverified: unverified}
}

// unplace forgets (lock held) that blob d is in its slot: a later "held"
// record, or its bytes found wrong.
func (w *Writer) unplace(d digest.Digest) {
	if b, ok := w.blobs[d]; ok && b.chunk != "" {
		if s, ok := w.slots[d]; ok && s.chunk == b.chunk && s.offset == b.offset {
			delete(w.blobs, d)
		}
	}
}

// inSlot reports whether blob d is written into its slot.
func (w *Writer) inSlot(d digest.Digest) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.blobs[d]
	s, slotted := w.slots[d]
	return ok && slotted && b.chunk == s.chunk && b.offset == s.offset
}
