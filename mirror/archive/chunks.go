package archive

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// plannedBlob is a blob placed in a chunk by the layout.
type plannedBlob struct {
	d      digest.Digest
	size   int64
	hdr    []byte
	offset int64 // data offset in its chunk
}

type plannedChunk struct {
	number      int
	blobs       []plannedBlob
	payloadSize int64
	// fixed: laid out before the copy, its blobs written in place (fixedChunks).
	fixed bool
}

// indexEntryBound returns an upper bound of the bytes the index entry takes for a
// chunk whose index lists entries of the given total JSON length and count.
func indexEntryBound(entriesLen int64, n int) int64 {
	base, _ := marshal(ChunkIndex{Kind: indexKind, FormatVersion: FormatVersion, ArchiveID: strings.Repeat("0", 32),
		Chunk: maxChunkCount, PayloadSize: math.MaxInt64, PayloadSHA256: strings.Repeat("0", 64), Blobs: []IndexBlob{}})
	size := int64(len(base)) + entriesLen + int64(max(n-1, 0))
	return blockSize + size + padding(size)
}

// layout assigns blobs to chunks (sorted by digest, greedy, split at blob
// boundaries) so that every chunk, trailer included, stays within the chunk size
// unless it holds a single oversized blob. It fills in the manifest's blob chunks
// and offsets and the chunk records (without hashes).
//
// fixed are the chunks laid out before the copy that go in as they are
// (fixedChunks): the other blobs are laid out in the numbers they leave free,
// then after them; a free number no chunk takes below the last chunk gets a
// chunk holding no blob. errPreNoRoom says that the first or the last chunk
// is a fixed one without room for the archive manifest.
//
// When assembling a sharded archive (FinishSharded), the blobs the shards'
// chunks hold are not laid out again: the shards' chunks follow this writer's
// own, in order, and when the last of them has no room for the manifest a last
// chunk holding no blob carries it (extra).
func (w *Writer) layout(m *Manifest, fixed []plannedChunk) (plan []plannedChunk, extra bool, err error) {
	inFixed := map[digest.Digest]bool{}
	taken := map[int]bool{}
	for _, c := range fixed {
		taken[c.number] = true
		for _, b := range c.blobs {
			inFixed[b.d] = true
		}
	}
	var free []int
	for n := 1; n <= len(w.pre); n++ {
		if !taken[n] {
			free = append(free, n)
		}
	}
	numberOf := func(i int) int {
		if i < len(free) {
			return free[i]
		}
		return len(w.pre) + 1 + i - len(free)
	}
	hdrs := make([][]byte, len(m.Blobs))
	for i, b := range m.Blobs {
		h, err := headerBytes(blobEntryName(b.Digest), b.Size)
		if err != nil {
			return nil, false, err
		}
		hdrs[i] = h
	}
	var reserve int64
	for iter := 0; ; iter++ {
		plan = nil
		cur := plannedChunk{number: numberOf(0)}
		var entriesLen int64
		for i, b := range m.Blobs {
			if _, ok := w.fromShards[b.Digest]; ok || inFixed[b.Digest] {
				continue
			}
			entryLen := int64(len(hdrs[i])) + b.Size + padding(b.Size)
			ib, _ := json.Marshal(IndexBlob{Digest: b.Digest, Size: b.Size, Offset: math.MaxInt64})
			fits := cur.payloadSize+entryLen+indexEntryBound(entriesLen+int64(len(ib)), len(cur.blobs)+1)+reserve+eofSize <= w.chunkSize
			if !fits && len(cur.blobs) > 0 {
				plan = append(plan, cur)
				cur = plannedChunk{number: numberOf(len(plan))}
				entriesLen = 0
			}
			cur.blobs = append(cur.blobs, plannedBlob{d: b.Digest, size: b.Size, hdr: hdrs[i], offset: cur.payloadSize + int64(len(hdrs[i]))})
			cur.payloadSize += entryLen
			entriesLen += int64(len(ib))
		}
		if len(cur.blobs) > 0 || len(fixed) == 0 {
			plan = append(plan, cur)
		}
		plan = append(plan, fixed...)
		last := 0
		for _, c := range plan {
			last = max(last, c.number)
		}
		for i := len(plan) - len(fixed); i < len(free); i++ {
			if free[i] < last {
				plan = append(plan, plannedChunk{number: free[i]}) // a hole: a chunk holding no blob
			}
		}
		slices.SortFunc(plan, func(a, b plannedChunk) int { return a.number - b.number })
		for i, c := range plan {
			if c.number != i+1 {
				return nil, false, fmt.Errorf("archive layout: chunk %d is numbered %d", i+1, c.number)
			}
		}
		total := len(plan) + len(w.tail)
		if extra {
			total++
		}
		if total > maxChunkCount {
			return nil, false, fmt.Errorf("archive needs %d chunks, more than %d: raise the archive size", total, maxChunkCount)
		}
		// Fill the manifest as the plan says, with placeholder hashes of the final length.
		pos := map[digest.Digest]*plannedBlob{}
		chunkOf := map[digest.Digest]int{}
		m.Chunks = m.Chunks[:0]
		zeros := strings.Repeat("0", 64)
		for ci := range plan {
			c := &plan[ci]
			for bi := range c.blobs {
				pos[c.blobs[bi].d] = &c.blobs[bi]
				chunkOf[c.blobs[bi].d] = c.number
			}
			m.Chunks = append(m.Chunks, ChunkRecord{Name: ChunkName(c.number), Number: c.number, Blobs: len(c.blobs),
				PayloadSize: c.payloadSize, PayloadSHA256: zeros, IndexSHA256: zeros})
		}
		for _, t := range w.tail {
			n := len(m.Chunks) + 1
			m.Chunks = append(m.Chunks, ChunkRecord{Name: ChunkName(n), Number: n, Blobs: len(t.blobs),
				PayloadSize: t.payloadSize, PayloadSHA256: zeros, IndexSHA256: zeros})
		}
		if extra {
			n := len(m.Chunks) + 1
			m.Chunks = append(m.Chunks, ChunkRecord{Name: ChunkName(n), Number: n, PayloadSHA256: zeros, IndexSHA256: zeros})
		}
		for i := range m.Blobs {
			d := m.Blobs[i].Digest
			if sb, ok := w.fromShards[d]; ok {
				m.Blobs[i].Chunk, m.Blobs[i].Offset = len(plan)+sb.tail+1, sb.offset
				continue
			}
			m.Blobs[i].Chunk, m.Blobs[i].Offset = chunkOf[d], pos[d].offset
		}
		mb, err := marshal(m)
		if err != nil {
			return nil, false, err
		}
		need := blockSize + int64(len(mb)) + padding(int64(len(mb))) + 2*blockSize // manifest + its sha256 entry
		if len(w.tail) > 0 && !extra {
			// The last shard chunk carries the manifest only if it has room.
			last := w.tail[len(w.tail)-1]
			if last.payloadSize+indexEntryBound(last.entriesLen(), len(last.blobs))+need+eofSize > w.chunkSize {
				extra = true
				continue
			}
		}
		carriers := []plannedChunk{plan[0]}
		if len(w.tail) == 0 {
			carriers = append(carriers, plan[len(plan)-1])
		}
		for _, c := range carriers {
			if c.fixed && c.payloadSize+indexEntryBound(c.entriesLen(), len(c.blobs))+need+eofSize > w.chunkSize {
				return nil, false, errPreNoRoom
			}
		}
		if need <= reserve {
			for _, c := range plan {
				if len(c.blobs) != 1 {
					continue
				}
				b := c.blobs[0]
				ib, _ := json.Marshal(IndexBlob{Digest: b.d, Size: b.size, Offset: math.MaxInt64})
				if c.payloadSize+indexEntryBound(int64(len(ib)), 1)+reserve+eofSize > w.chunkSize {
					const gib = 1 << 30
					if w.strict {
						return nil, false, w.strictErr(b.d, b.size)
					}
					w.log.Warn("blob is larger than the archive chunk size; it gets a chunk of its own",
						"blob", b.d, "size", b.size, "chunk", ChunkName(c.number), "chunkSize", w.chunkSize,
						"recommendedArchiveSizeGiB", (b.size+gib-1)/gib+1)
				}
			}
			return plan, extra, nil
		}
		reserve = need
		if iter > 50 {
			return nil, false, fmt.Errorf("archive layout does not converge for chunk size %d: raise the archive size", w.chunkSize)
		}
	}
}

// strictErr refuses blob d, larger than the chunk size, under --strict-archive.
func (w *Writer) strictErr(d digest.Digest, size int64) error {
	const gib = 1 << 30
	return fmt.Errorf("blob %s (%d bytes) is larger than the archive size (%d bytes) and --strict-archive is set: raise archiveSize to %d (GiB) or drop --strict-archive", d, size, w.chunkSize, (size+gib-1)/gib+1)
}

// entriesLen is the JSON length of chunk c's index entries, bounded as layout
// bounds them.
func (c plannedChunk) entriesLen() int64 {
	var n int64
	for _, b := range c.blobs {
		ib, _ := json.Marshal(IndexBlob{Digest: b.d, Size: b.size, Offset: math.MaxInt64})
		n += int64(len(ib))
	}
	return n
}

// writeChunks writes every chunk body (blobs, index), then the trailers (manifest in
// the first and last chunk, tar end), syncing each file.
func (w *Writer) writeChunks(ctx context.Context, m *Manifest, plan []plannedChunk) error {
	bodies, err := w.writeBodies(ctx, m.ArchiveID, plan)
	if err != nil {
		return err
	}
	for i := range bodies {
		m.Chunks[i] = bodies[i].Record
	}
	mb, err := marshal(m)
	if err != nil {
		return err
	}
	for i, c := range bodies {
		withManifest := i == 0 || i == len(bodies)-1
		if err := writeTrailer(filepath.Join(w.dir, c.Record.Name), c.BodySize, mb, withManifest); err != nil {
			return err
		}
	}
	return nil
}

// writeBodies writes the body (blobs, index) of every chunk of the plan, keeping
// those an interrupted Finish completed, and returns them in plan order.
func (w *Writer) writeBodies(ctx context.Context, archiveID string, plan []plannedChunk) ([]completedChunk, error) {
	// Chunks of an interrupted Finish that match the plan are kept as they are.
	kept := map[int]completedChunk{}
	if w.completed != nil && w.completed.ArchiveID == archiveID {
		for _, c := range w.completed.Chunks {
			n := c.Record.Number
			if n < 1 || n > len(plan) || !sameBlobs(c.Blobs, plan[n-1].blobs) {
				continue
			}
			kept[n] = c
		}
	}
	// Chunks laid out before the copy hold their blobs in place: they are
	// sealed (again), never removed.
	inPlace := map[string]bool{}
	for _, c := range plan {
		if c.fixed {
			inPlace[w.chunkName(c.number)] = true
		}
	}
	// Blobs that live only in chunks that are not kept go back to the staging area.
	if w.completed != nil {
		for _, c := range w.completed.Chunks {
			if _, ok := kept[c.Record.Number]; ok || inPlace[c.Record.Name] {
				continue
			}
			if err := w.unstage(ctx, c.Record.Name); err != nil {
				return nil, err
			}
		}
	}
	// Remove this writer's chunk files that the plan does not keep (the
	// half-written chunk of an interrupted Finish, chunks beyond the plan). There
	// are none of a finished archive: NewWriter refuses a finished archive.
	existing, err := w.ownChunks()
	if err != nil {
		return nil, err
	}
	for _, name := range existing {
		n, _ := w.ownNumber(name)
		if c, ok := kept[n]; (ok && c.Record.Name == name) || inPlace[name] {
			continue
		}
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil {
			return nil, fmt.Errorf("remove old chunk: %w", err)
		}
	}
	fj := finishJournal{ArchiveID: archiveID}
	for n := 1; n <= len(plan); n++ {
		if c, ok := kept[n]; ok {
			fj.Chunks = append(fj.Chunks, c)
		}
	}
	if err := w.saveFinishJournal(&fj); err != nil {
		return nil, err
	}
	bodies := make([]completedChunk, len(plan))
	for i, c := range plan {
		if k, ok := kept[c.number]; ok {
			bodies[i] = k
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		write := w.writeBody
		if c.fixed {
			write = w.sealBody
		}
		cc, err := write(ctx, archiveID, c)
		if err != nil {
			return nil, err
		}
		bodies[i] = cc
		fj.Chunks = append(fj.Chunks, cc)
		if err := w.saveFinishJournal(&fj); err != nil {
			return nil, err
		}
		// The chunk is durable: drop the staged copies of its blobs.
		for _, b := range c.blobs {
			if w.blobs[b.d].chunk == "" {
				_ = os.Remove(w.stagedPath(b.d))
			}
			w.blobs[b.d].chunk = cc.Record.Name
			w.blobs[b.d].offset = b.offset
		}
	}
	return bodies, nil
}

func sameBlobs(a []IndexBlob, b []plannedBlob) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Digest != b[i].d || a[i].Size != b[i].size || a[i].Offset != b[i].offset {
			return false
		}
	}
	return true
}

// unstage copies the blobs of a completed chunk that is not kept back into the
// staging area (verifying them), so that the chunk can be rewritten.
func (w *Writer) unstage(ctx context.Context, chunk string) error {
	for d, b := range w.blobs {
		if b.chunk != chunk {
			continue
		}
		rc, err := w.openBlob(d)
		if err != nil {
			return err
		}
		err = w.stage(ctx, endpoint.Descriptor{Digest: d, Size: b.size}, rc, 0, nil)
		rc.Close()
		if err != nil {
			return fmt.Errorf("chunk %s: %w", chunk, err)
		}
		b.chunk = ""
	}
	return nil
}

func (w *Writer) saveFinishJournal(fj *finishJournal) error {
	b, err := marshal(fj)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(w.staging, "finish.json"), b)
}

// writeBody writes the blobs and the index of chunk c, re-verifying every blob
// while it copies, and syncs the file.
func (w *Writer) writeBody(ctx context.Context, archiveID string, c plannedChunk) (completedChunk, error) {
	name := w.chunkName(c.number)
	path := filepath.Join(w.dir, name)
	f, err := os.Create(path)
	if err != nil {
		return completedChunk{}, fmt.Errorf("create chunk %s: %w", name, err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	payload := sha256.New()
	out := io.MultiWriter(bw, payload)
	zeros := make([]byte, blockSize)
	buf := make([]byte, 1<<20)
	idx := ChunkIndex{Kind: indexKind, FormatVersion: FormatVersion, ArchiveID: archiveID, Chunk: c.number, Blobs: []IndexBlob{}}
	var pos int64
	for _, b := range c.blobs {
		if _, err := out.Write(b.hdr); err != nil {
			return completedChunk{}, fmt.Errorf("write chunk %s: %w", name, err)
		}
		pos += int64(len(b.hdr))
		if pos != b.offset {
			return completedChunk{}, fmt.Errorf("chunk %s: internal layout error at blob %s", name, b.d)
		}
		rc, err := w.openBlob(b.d)
		if err != nil {
			return completedChunk{}, err
		}
		vd := digest.SHA256.Digester()
		n, err := copyHashing(out, vd.Hash(), &ctxReader{ctx, io.LimitReader(rc, b.size)}, buf)
		rc.Close()
		if err != nil {
			return completedChunk{}, fmt.Errorf("chunk %s: copy blob %s: %w", name, b.d, err)
		}
		if n != b.size || vd.Digest() != b.d {
			_ = os.Remove(w.stagedPath(b.d))
			return completedChunk{}, fmt.Errorf("chunk %s: staged blob %s is corrupt (%d bytes, digest %s): %w; it was removed, run mirror-to-disk again to fetch it", name, b.d, n, vd.Digest(), ErrCorrupt)
		}
		if _, err := out.Write(zeros[:padding(b.size)]); err != nil {
			return completedChunk{}, fmt.Errorf("write chunk %s: %w", name, err)
		}
		pos += b.size + padding(b.size)
		idx.Blobs = append(idx.Blobs, IndexBlob{Digest: b.d, Size: b.size, Offset: b.offset})
	}
	idx.PayloadSize = pos
	idx.PayloadSHA256 = hex.EncodeToString(payload.Sum(nil))
	ib, err := marshal(idx)
	if err != nil {
		return completedChunk{}, err
	}
	body, err := entryBytes(indexName, ib)
	if err != nil {
		return completedChunk{}, err
	}
	if _, err := bw.Write(body); err != nil {
		return completedChunk{}, fmt.Errorf("write chunk %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return completedChunk{}, fmt.Errorf("write chunk %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return completedChunk{}, fmt.Errorf("sync chunk %s: %w", name, err)
	}
	isum := sha256.Sum256(ib)
	return completedChunk{
		Record: ChunkRecord{Name: name, Number: c.number, Blobs: len(c.blobs), PayloadSize: pos,
			PayloadSHA256: idx.PayloadSHA256, IndexSHA256: hex.EncodeToString(isum[:])},
		BodySize: pos + int64(len(body)),
		Blobs:    idx.Blobs,
	}, f.Close()
}
