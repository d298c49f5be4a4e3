package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
)

// errPreNoRoom says that a chunk laid out before the copy that must carry the
// archive manifest (the first or the last) has no room for it.
var errPreNoRoom = errors.New("no room for the archive manifest in a chunk laid out before the copy")

// fixedChunks returns the chunks laid out before the copy that go into the
// archive as they are: every blob of theirs is in its slot and in m.Blobs. The
// others are dissolved (their blobs go back to the staging area, and Finish
// lays them out again with the staged blobs), so are all of them when they
// were laid out for another chunk size.
func (w *Writer) fixedChunks(ctx context.Context, m *Manifest) ([]plannedChunk, error) {
	if len(w.pre) == 0 {
		return nil, nil
	}
	want := map[digest.Digest]bool{}
	for _, b := range m.Blobs {
		if _, ok := w.fromShards[b.Digest]; !ok {
			want[b.Digest] = true
		}
	}
	var fixed []plannedChunk
	var dissolve []int
	for i, c := range w.pre {
		if len(c.Blobs) == 0 {
			continue
		}
		name := w.chunkName(c.Number)
		ok := w.preSize == w.chunkSize
		pc := plannedChunk{number: c.Number, payloadSize: c.PayloadSize, fixed: true}
		for _, b := range c.Blobs {
			sb := w.blobs[b.Digest]
			if sb == nil || sb.chunk != name || sb.offset != b.Offset || !want[b.Digest] {
				ok = false
				break
			}
			h, err := headerBytes(blobEntryName(b.Digest), b.Size)
			if err != nil {
				return nil, err
			}
			pc.blobs = append(pc.blobs, plannedBlob{d: b.Digest, size: b.Size, hdr: h, offset: b.Offset})
		}
		if ok {
			fixed = append(fixed, pc)
		} else {
			dissolve = append(dissolve, i)
		}
	}
	if len(dissolve) > 0 {
		w.log.Info("chunks laid out before the copy are written again from the staging area: some of their blobs were not written or are not in the archive", "chunks", len(dissolve))
		if err := w.dissolve(ctx, dissolve); err != nil {
			return nil, err
		}
	}
	return fixed, nil
}

// dissolve sends the blobs of the pre-laid chunks at positions which back to
// the staging area (verifying them) and records those chunks as holding none:
// their numbers are free for Finish's layout.
func (w *Writer) dissolve(ctx context.Context, which []int) error {
	for _, i := range which {
		for _, b := range w.pre[i].Blobs {
			delete(w.slots, b.Digest) // so that stage puts them in the staging area
		}
	}
	for _, i := range which {
		w.mu.Lock()
		delete(w.regions, w.pre[i].Number) // the number is Finish's to reuse
		w.mu.Unlock()
		if err := w.unstage(ctx, w.chunkName(w.pre[i].Number)); err != nil {
			return err
		}
		w.pre[i].Blobs, w.pre[i].PayloadSize = nil, 0
	}
	return w.savePreLayout()
}

// dissolveAll dissolves every pre-laid chunk that holds blobs.
func (w *Writer) dissolveAll(ctx context.Context) error {
	var all []int
	for i, c := range w.pre {
		if len(c.Blobs) > 0 {
			all = append(all, i)
		}
	}
	if len(all) == 0 {
		return nil
	}
	return w.dissolve(ctx, all)
}

// sealBody ends the body of chunk c laid out before the copy, whose blobs are
// in place: it verifies again the blobs an earlier process wrote, finishes
// the hash of the blob region (computed during the copy up to its frontier,
// slothash.go), writes the index after it, and syncs the file.
func (w *Writer) sealBody(ctx context.Context, archiveID string, c plannedChunk) (completedChunk, error) {
	name := w.chunkName(c.number)
	f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_RDWR, 0)
	if err != nil {
		return completedChunk{}, fmt.Errorf("open chunk %s: %w", name, err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	idx := ChunkIndex{Kind: indexKind, FormatVersion: FormatVersion, ArchiveID: archiveID, Chunk: c.number, Blobs: []IndexBlob{}}
	for _, b := range c.blobs {
		idx.Blobs = append(idx.Blobs, IndexBlob{Digest: b.d, Size: b.size, Offset: b.offset})
		sb := w.blobs[b.d]
		if !sb.unverified {
			continue
		}
		vd := digest.SHA256.Digester()
		n, err := io.CopyBuffer(vd.Hash(), &ctxReader{ctx, io.NewSectionReader(f, b.offset, b.size)}, buf)
		if err != nil {
			return completedChunk{}, fmt.Errorf("chunk %s: read blob %s: %w", name, b.d, err)
		}
		if n != b.size || vd.Digest() != b.d {
			w.unplace(b.d)
			_ = w.writeJournal(journalRecord{Op: "held", Digest: b.d})
			return completedChunk{}, fmt.Errorf("chunk %s: blob %s written by the interrupted run is corrupt (%d bytes, digest %s): %w; run mirror-to-disk again to fetch it", name, b.d, n, vd.Digest(), ErrCorrupt)
		}
		sb.unverified = false
	}
	// The hash computed during the copy (slothash.go), finished from its
	// frontier.
	payload, done := w.regionFrom(c.number)
	if done > c.payloadSize {
		payload, done = sha256.New(), 0
	}
	n, err := io.CopyBuffer(payload, &ctxReader{ctx, io.NewSectionReader(f, done, c.payloadSize-done)}, buf)
	w.readBack += n
	n += done
	if err != nil {
		return completedChunk{}, fmt.Errorf("chunk %s: %w", name, err)
	}
	if n != c.payloadSize {
		return completedChunk{}, fmt.Errorf("chunk %s: %d bytes, its blobs take %d: %w", name, n, c.payloadSize, ErrCorrupt)
	}
	idx.PayloadSize = c.payloadSize
	idx.PayloadSHA256 = hex.EncodeToString(payload.Sum(nil))
	ib, err := marshal(idx)
	if err != nil {
		return completedChunk{}, err
	}
	body, err := entryBytes(indexName, ib)
	if err != nil {
		return completedChunk{}, err
	}
	if _, err := f.WriteAt(body, c.payloadSize); err != nil {
		return completedChunk{}, fmt.Errorf("write chunk %s: %w", name, err)
	}
	if err := f.Truncate(c.payloadSize + int64(len(body))); err != nil {
		return completedChunk{}, fmt.Errorf("chunk %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return completedChunk{}, fmt.Errorf("sync chunk %s: %w", name, err)
	}
	isum := sha256.Sum256(ib)
	return completedChunk{
		Record: ChunkRecord{Name: name, Number: c.number, Blobs: len(c.blobs), PayloadSize: c.payloadSize,
			PayloadSHA256: idx.PayloadSHA256, IndexSHA256: hex.EncodeToString(isum[:])},
		BodySize: c.payloadSize + int64(len(body)),
		Blobs:    idx.Blobs,
	}, f.Close()
}

// planChunks lays out the archive's chunks: the chunks laid out before the
// copy that go in as they are, then the staged blobs (layout). When the first
// or the last chunk is one laid out before the copy without room for the
// archive manifest, they are all laid out again from the staging area.
func (w *Writer) planChunks(ctx context.Context, m *Manifest) ([]plannedChunk, bool, error) {
	fixed, err := w.fixedChunks(ctx, m)
	if err != nil {
		return nil, false, err
	}
	plan, extra, err := w.layout(m, fixed)
	if !errors.Is(err, errPreNoRoom) {
		return plan, extra, err
	}
	w.log.Info("the chunks laid out before the copy have no room for the archive manifest: they are written again from the staging area")
	if err := w.dissolveAll(ctx); err != nil {
		return nil, false, err
	}
	return w.layout(m, nil)
}
