package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// shardBlob is a blob a shard's chunk holds: tail is the position of that chunk
// in Writer.tail.
type shardBlob struct {
	size   int64
	tail   int
	offset int64
}

// tailChunk is a shard's chunk, placed after the finish part's own chunks.
type tailChunk struct {
	file        string
	payloadSize int64
	payloadSHA  string
	blobs       []IndexBlob
}

// entriesLen is the JSON length of the chunk's index entries, bounded as layout
// bounds them.
func (t tailChunk) entriesLen() int64 {
	var n int64
	for _, b := range t.blobs {
		ib, _ := json.Marshal(IndexBlob{Digest: b.Digest, Size: b.Size, Offset: math.MaxInt64})
		n += int64(len(ib))
	}
	return n
}

// assembly is the journal of FinishSharded's last step (.airlock-staging/
// assemble.json): every chunk file to end with its final index (and the
// manifest) and to rename, so that an interrupted --finish completes it.
type assembly struct {
	Manifest []byte         `json:"manifest"`
	Steps    []assembleStep `json:"steps"`
	// Remove are the shard records and staging areas to remove at the end.
	Remove []string `json:"remove"`
}

type assembleStep struct {
	From        string `json:"from"`
	To          string `json:"to"`
	PayloadSize int64  `json:"payloadSize"`
	Index       []byte `json:"index"`
	Manifest    bool   `json:"manifest,omitempty"`
	// Create is set for the last chunk that holds no blob, only the manifest.
	Create bool `json:"create,omitempty"`
}

const assemblyName = "assemble.json"

// beforeAssembly runs once the assembly journal is written; an error stops
// FinishSharded there (tests interrupt it this way).
var beforeAssembly = func(ctx context.Context) error { return ctx.Err() }

// FinishSharded ends a sharded archive (the finish part's Writer, whose
// Elsewhere are the shards' blobs): it stages the manifests the shards
// recorded, checks that the plan (meta) is complete across the shards and this
// writer (the catalog images it was given), writes its own chunks (the
// manifests, the catalog images) first, then makes every shard chunk a chunk
// of the archive: truncated after its blobs, given its final index, and
// renamed airlock_NNNNNN.tar; the first and the last chunk get the archive
// manifest. No shard blob is copied. shards must be every shard's record, in
// order.
func (w *Writer) FinishSharded(ctx context.Context, meta Meta, shards []*ShardRecord) (*Manifest, error) {
	if w.part != finishPart {
		return nil, fmt.Errorf("FinishSharded on a writer that is not the finish part (part %q)", w.part)
	}
	if err := w.markFinished(); err != nil {
		return nil, err
	}
	if err := w.takeShards(ctx, shards); err != nil {
		return nil, err
	}
	m, _, err := w.buildManifest(meta)
	if err != nil {
		return nil, err
	}
	plan, extra, err := w.planChunks(ctx, m)
	if err != nil {
		return nil, err
	}
	bodies, err := w.writeBodies(ctx, m.ArchiveID, plan)
	if err != nil {
		return nil, err
	}
	var a assembly
	step := func(from string, create bool, payloadSize int64, payloadSHA string, blobs []IndexBlob) error {
		n := len(a.Steps) + 1
		idx := ChunkIndex{Kind: indexKind, FormatVersion: FormatVersion, ArchiveID: m.ArchiveID, Chunk: n,
			PayloadSize: payloadSize, PayloadSHA256: payloadSHA, Blobs: blobs}
		if idx.Blobs == nil {
			idx.Blobs = []IndexBlob{}
		}
		ib, err := marshal(idx)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(ib)
		m.Chunks[n-1] = ChunkRecord{Name: ChunkName(n), Number: n, Blobs: len(blobs), PayloadSize: payloadSize,
			PayloadSHA256: payloadSHA, IndexSHA256: hex.EncodeToString(sum[:])}
		a.Steps = append(a.Steps, assembleStep{From: from, To: ChunkName(n), PayloadSize: payloadSize, Index: ib, Create: create})
		return nil
	}
	for _, c := range bodies {
		if err := step(c.Record.Name, false, c.Record.PayloadSize, c.Record.PayloadSHA256, c.Blobs); err != nil {
			return nil, err
		}
	}
	for _, t := range w.tail {
		if err := step(t.file, false, t.payloadSize, t.payloadSHA, t.blobs); err != nil {
			return nil, err
		}
	}
	if extra {
		empty := sha256.Sum256(nil)
		if err := step(w.chunkName(len(a.Steps)+1), true, 0, hex.EncodeToString(empty[:]), nil); err != nil {
			return nil, err
		}
	}
	a.Steps[0].Manifest = true
	a.Steps[len(a.Steps)-1].Manifest = true
	if a.Manifest, err = marshal(m); err != nil {
		return nil, err
	}
	for _, s := range shards {
		a.Remove = append(a.Remove, ShardRecordName(s.Part), stagingName(s.Part))
	}
	b, err := marshal(a)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(w.staging, assemblyName), b); err != nil {
		return nil, fmt.Errorf("write the assembly journal: %w", err)
	}
	if err := beforeAssembly(ctx); err != nil {
		return nil, err
	}
	if err := a.complete(w.dir); err != nil {
		return nil, err
	}
	return m, w.finishSigned()
}

// takeShards makes the shards' records part of this writer: their manifests
// are staged, their tags and the blobs they rely on recorded, and their chunks
// become the tail of the archive.
func (w *Writer) takeShards(ctx context.Context, shards []*ShardRecord) error {
	w.fromShards = map[digest.Digest]shardBlob{}
	w.shards = len(shards)
	owner := map[digest.Digest]string{}
	for _, s := range shards {
		if s.ChunkSize != w.chunkSize {
			return fmt.Errorf("shard %s wrote chunks of at most %d bytes, this run's archive size is %d bytes: run every shard and --finish with the same configuration", s.Part, s.ChunkSize, w.chunkSize)
		}
		base := len(w.tail)
		for i, c := range s.Chunks {
			info, err := os.Stat(filepath.Join(w.dir, c.Name))
			if err != nil || !info.Mode().IsRegular() || info.Size() < c.PayloadSize {
				return fmt.Errorf("chunk %s of shard %s is missing or shorter than its record says: %w; remove %s and run that shard again", c.Name, s.Part, ErrCorrupt, ShardRecordName(s.Part))
			}
			t := tailChunk{file: c.Name, payloadSize: c.PayloadSize, payloadSHA: c.PayloadSHA256, blobs: []IndexBlob{}}
			for _, b := range s.Blobs {
				if b.Chunk == i+1 {
					t.blobs = append(t.blobs, IndexBlob{Digest: b.Digest, Size: b.Size, Offset: b.Offset})
				}
			}
			w.tail = append(w.tail, t)
		}
		for _, b := range s.Blobs {
			if o, dup := owner[b.Digest]; dup {
				return fmt.Errorf("blob %s is in the chunks of both %s and %s: the shards were run for different plans or shard counts; remove the batch folder and run the shards of one plan again", b.Digest, o, s.Part)
			}
			owner[b.Digest] = s.Part
			w.fromShards[b.Digest] = shardBlob{size: b.Size, tail: base + b.Chunk - 1, offset: b.Offset}
		}
		for _, mf := range s.Manifests {
			if err := w.stageManifest(ctx, mf); err != nil {
				return fmt.Errorf("shard %s: %w", s.Part, err)
			}
		}
		for _, t := range s.Tags {
			k := tagKey{t.Repo, t.Reference}
			if old, ok := w.tags[k]; ok && old.Digest != t.Digest {
				return fmt.Errorf("%s:%s is manifest %s in shard %s and %s elsewhere: the shards were run for different plans", t.Repo, t.Reference, t.Digest, s.Part, old.Digest)
			}
			w.setTag(t)
		}
		for _, r := range s.ReliesOn {
			if w.relied[r.Digest] == nil {
				w.relied[r.Digest] = &reliedBlob{size: r.Size, repos: map[string]struct{}{}, origin: r.Origin}
			}
		}
	}
	return nil
}

// stageManifest stages a manifest a shard recorded, unless it is staged.
func (w *Writer) stageManifest(ctx context.Context, mf ShardManifest) error {
	if _, ok := w.blobs[mf.Digest]; ok {
		return nil
	}
	d := endpoint.Descriptor{Digest: mf.Digest, Size: int64(len(mf.Raw))}
	if err := w.stage(ctx, d, bytes.NewReader(mf.Raw), 0, nil); err != nil {
		return err
	}
	if _, ok := w.blobs[mf.Digest]; !ok {
		w.blobs[mf.Digest] = &stagedBlob{size: d.Size, repos: map[string]struct{}{}}
	}
	return nil
}

// complete runs the journal's steps (each is skipped when already done: the
// chunk was renamed), then removes the shards' records and staging areas.
func (a *assembly) complete(dir string) error {
	for _, s := range a.Steps {
		from, to := filepath.Join(dir, s.From), filepath.Join(dir, s.To)
		if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(to); err == nil {
				continue // renamed by an interrupted run
			}
			if !s.Create {
				return fmt.Errorf("chunk %s (to become %s) is missing: %w; remove the folder %s and run the shards again", s.From, s.To, ErrCorrupt, dir)
			}
		}
		entry, err := entryBytes(indexName, s.Index)
		if err != nil {
			return err
		}
		if err := writeTail(from, s.PayloadSize, entry, a.Manifest, s.Manifest, s.Create); err != nil {
			return err
		}
		if err := os.Rename(from, to); err != nil {
			return fmt.Errorf("rename chunk %s to %s: %w", s.From, s.To, err)
		}
	}
	syncDir(dir)
	for _, r := range a.Remove {
		if err := os.RemoveAll(filepath.Join(dir, r)); err != nil {
			return fmt.Errorf("remove %s: %w", r, err)
		}
	}
	return nil
}

// ResumeAssembly completes the last step of an interrupted FinishSharded in
// dir, if there is one, and returns the archive manifest (nil when there was
// nothing to complete).
func ResumeAssembly(dir string) (*Manifest, error) {
	staging := filepath.Join(dir, stagingDirName)
	b, err := os.ReadFile(filepath.Join(staging, assemblyName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the assembly journal: %w", err)
	}
	var a assembly
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("assembly journal %s is not valid: %v; remove the folder %s and run the shards again", filepath.Join(staging, assemblyName), err, dir)
	}
	var m Manifest
	if err := strictUnmarshal(a.Manifest, &m); err != nil {
		return nil, fmt.Errorf("assembly journal %s: the archive manifest is not valid: %v", filepath.Join(staging, assemblyName), err)
	}
	if err := a.complete(dir); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(staging); err != nil {
		return nil, fmt.Errorf("remove staging area: %w", err)
	}
	syncDir(dir)
	return &m, nil
}
