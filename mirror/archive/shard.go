package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/opencontainers/go-digest"
)

// A sharded mirror-to-disk fills one batch folder from several processes
// (bastions, pods), each copying one shard of the plan:
//
//	batch-0002/airlock_shard-1-of-4_000001.tar …  shard 1's chunks: its blobs and
//	                                              an index, no archive manifest
//	batch-0002/airlock_shard-1-of-4.json          shard 1's record, written last:
//	                                              its images, tags, manifests,
//	                                              chunks and blob offsets
//	batch-0002/.airlock-staging-shard-1-of-4/     shard 1's staging area while it runs
//
// Each shard writes only the blobs it owns (the plan's partition gives every
// blob one owner; Elsewhere are those another shard writes) and keeps the
// manifests of its images in its record, since two shards may share a manifest.
// FinishSharded (airlock mirror --finish) then writes the manifests and the
// catalog images into chunks of its own, and turns every shard chunk into a
// chunk of the archive: the chunk files are renamed airlock_NNNNNN.tar and their
// indexes rewritten with the archive's id; no blob is copied again. The result
// is an ordinary archive.

const (
	shardKind      = "AirlockShard"
	finishPart     = "finish"
	shardFilePref  = chunkPrefix
	shardRecordExt = ".json"
)

// FinishPart is the part of a sharded archive FinishSharded writes itself: the
// manifests and the catalog images.
const FinishPart = finishPart

var (
	partRE        = regexp.MustCompile(`^shard-([0-9]+)-of-([0-9]+)$`)
	partChunkRE   = regexp.MustCompile(`^airlock_(shard-[0-9]+-of-[0-9]+|finish)_([0-9]{6})\.tar$`)
	shardRecordRE = regexp.MustCompile(`^airlock_(shard-[0-9]+-of-[0-9]+)\.json$`)
	shardStageRE  = regexp.MustCompile(`^\.airlock-staging-(shard-[0-9]+-of-[0-9]+)$`)
)

// ShardPart names shard index (0 to of-1) of a sharded archive: "shard-1-of-4".
func ShardPart(index, of int) string { return fmt.Sprintf("shard-%d-of-%d", index, of) }

// parsePart returns the index and count of a shard part.
func parsePart(part string) (index, of int, ok bool) {
	m := partRE.FindStringSubmatch(part)
	if m == nil {
		return 0, 0, false
	}
	index, err1 := strconv.Atoi(m[1])
	of, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || of < 1 || index >= of {
		return 0, 0, false
	}
	return index, of, true
}

func validPart(part string) bool {
	_, _, ok := parsePart(part)
	return ok || part == finishPart
}

// stagingName is the staging folder of a part: the finish part and an ordinary
// archive share .airlock-staging (while it exists, the batch is unfinished).
func stagingName(part string) string {
	if part == "" || part == finishPart {
		return stagingDirName
	}
	return stagingDirName + "-" + part
}

// ShardRecordName is the file a finished shard leaves in the batch folder.
func ShardRecordName(part string) string { return shardFilePref + part + shardRecordExt }

// chunkName is the file name of this writer's chunk n.
func (w *Writer) chunkName(n int) string {
	if w.part == "" {
		return ChunkName(n)
	}
	return fmt.Sprintf("%s%s_%06d%s", chunkPrefix, w.part, n, chunkSuffix)
}

// ownNumber parses the name of one of this writer's chunks.
func (w *Writer) ownNumber(name string) (int, bool) {
	if w.part == "" {
		return chunkNumber(name)
	}
	m := partChunkRE.FindStringSubmatch(name)
	if m == nil || m[1] != w.part {
		return 0, false
	}
	n, err := strconv.Atoi(m[2])
	return n, err == nil && n >= 1
}

// ownChunks lists this writer's chunk files, sorted.
func (w *Writer) ownChunks() ([]string, error) {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, fmt.Errorf("read archive directory: %w", err)
	}
	var out []string
	for _, e := range ents {
		if _, ok := w.ownNumber(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// shardFiles lists what shards left in dir: chunk files, records and staging
// areas of any part.
func shardFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read archive directory: %w", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if partChunkRE.MatchString(n) || shardRecordRE.MatchString(n) || shardStageRE.MatchString(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// checkDir refuses a folder this writer must not write into: a finished
// archive; for an ordinary archive, a folder shards of a sharded run are
// filling; for a part, a folder holding an archive's chunks.
func (w *Writer) checkDir(resuming bool) error {
	chunks, err := listChunks(w.dir)
	if err != nil {
		return err
	}
	if w.part == "" {
		if !resuming && len(chunks) > 0 {
			return fmt.Errorf("%s: %w (%d chunks); a finished archive is never rewritten: write into an empty directory", w.dir, ErrArchiveExists, len(chunks))
		}
		sf, err := shardFiles(w.dir)
		if err != nil {
			return err
		}
		if len(sf) > 0 {
			return fmt.Errorf("%s holds the shards of a sharded mirror-to-disk (%s …): finish it with airlock mirror --plan FILE --finish, or remove the folder to start over", w.dir, sf[0])
		}
		return nil
	}
	if len(chunks) > 0 {
		return fmt.Errorf("%s: %w or the chunks of an interrupted mirror-to-disk (%s …): shards write into a batch of their own; finish that run first, or remove the folder to start over", w.dir, ErrArchiveExists, chunks[0])
	}
	return nil
}

// ShardRecord is what a shard wrote into the batch folder (airlock_PART.json).
type ShardRecord struct {
	Kind          string `json:"kind"`
	FormatVersion int    `json:"formatVersion"`
	// Part is the shard ("shard-1-of-4"); Index and Of say the same.
	Part  string `json:"part"`
	Index int    `json:"index"`
	Of    int    `json:"of"`
	// Batch and BuildsOn are the batch the shard wrote and the earlier batches
	// it did not ship again: every shard and --finish must agree on them.
	Batch     int        `json:"batch"`
	BuildsOn  []BatchRef `json:"buildsOn,omitempty"`
	ChunkSize int64      `json:"chunkSize"`
	// Images are the images of the plan the shard copied.
	Images []ImageRecord `json:"images"`
	Tags   []TagRecord   `json:"tags"`
	// Manifests are the manifests of its images (they go into the archive
	// once, through FinishSharded, since two shards may share one).
	Manifests []ShardManifest `json:"manifests"`
	// Blobs are the blobs its chunks hold (Chunk is the number in Chunks).
	Blobs []BlobRecord `json:"blobs"`
	// Chunks are its chunk files (Name is the file in the batch folder).
	Chunks []ChunkRecord `json:"chunks"`
	// ReliesOn are blobs its images need that earlier batches shipped.
	ReliesOn []ReliedRecord `json:"reliesOn"`
	// Failed are the images of the shard's part of the plan it could not get
	// (Meta.Failed): not in Images, recorded by --finish in the partial batch.
	Failed []FailedRecord `json:"failed,omitempty"`
}

// ShardManifest is one manifest of a shard's images.
type ShardManifest struct {
	Digest    digest.Digest `json:"digest"`
	MediaType string        `json:"mediaType,omitempty"`
	Raw       []byte        `json:"raw"`
}

// BlobBytes is the size of the blobs the shard's chunks hold.
func (s *ShardRecord) BlobBytes() int64 {
	var n int64
	for _, b := range s.Blobs {
		n += b.Size
	}
	return n
}

// FinishShard writes this shard's chunks (the blobs its images reach that no
// other shard writes and no earlier batch shipped, sorted by digest, each chunk
// with its index and no archive manifest), then its record, then removes its
// staging area. meta names the shard's images; Batch and BuildsOn are recorded
// for FinishSharded to check, Failed the images of its part it could not get.
// An interrupted FinishShard resumes like Finish.
func (w *Writer) FinishShard(ctx context.Context, meta Meta) (*ShardRecord, error) {
	index, of, ok := parsePart(w.part)
	if !ok {
		return nil, fmt.Errorf("FinishShard on a writer that is not a shard (part %q)", w.part)
	}
	if err := w.markFinished(); err != nil {
		return nil, err
	}

	m, reach, err := w.buildManifest(meta)
	if err != nil {
		return nil, err
	}
	rec := &ShardRecord{Kind: shardKind, FormatVersion: FormatVersion, Part: w.part, Index: index, Of: of,
		Batch: meta.Batch, BuildsOn: meta.BuildsOn, ChunkSize: w.chunkSize,
		Images: m.Images, Tags: m.Tags, ReliesOn: m.ReliesOn, Manifests: []ShardManifest{}, Failed: m.Failed}
	mediaTypes := map[digest.Digest]string{}
	for _, t := range m.Tags {
		mediaTypes[t.Digest] = t.MediaType
	}
	blobs := m.Blobs[:0:0]
	for _, b := range m.Blobs {
		if !reach.manifests[b.Digest] {
			blobs = append(blobs, b)
			continue
		}
		raw, err := w.readStaged(b.Digest)
		if err != nil {
			return nil, err
		}
		rec.Manifests = append(rec.Manifests, ShardManifest{Digest: b.Digest, MediaType: mediaTypes[b.Digest], Raw: raw})
	}
	m.Blobs = blobs
	// The chunks' indexes name the shard until FinishSharded rewrites them.
	m.ArchiveID = w.part
	plan, _, err := w.planChunks(ctx, m)
	if err != nil {
		return nil, err
	}
	bodies, err := w.writeBodies(ctx, m.ArchiveID, plan)
	if err != nil {
		return nil, err
	}
	for i, c := range bodies {
		m.Chunks[i] = c.Record
		if err := writeTrailer(filepath.Join(w.dir, c.Record.Name), c.BodySize, nil, false); err != nil {
			return nil, err
		}
	}
	rec.Blobs, rec.Chunks = m.Blobs, m.Chunks
	b, err := marshal(rec)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(w.dir, ShardRecordName(w.part)), b); err != nil {
		return nil, fmt.Errorf("write the shard record: %w", err)
	}
	return rec, w.dropStaging()
}

// Shards is what the shards of a sharded mirror-to-disk left in a batch folder.
type Shards struct {
	// Done are the records of the shards that finished, by index.
	Done []*ShardRecord
	// Started are the parts that have a staging area and no record yet.
	Started []string
}

// ReadShards reads the shard records in dir (a batch folder).
func ReadShards(dir string) (*Shards, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &Shards{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read archive directory: %w", err)
	}
	s := &Shards{}
	done := map[string]bool{}
	for _, e := range ents {
		m := shardRecordRE.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		rec, err := readShardRecord(filepath.Join(dir, e.Name()), m[1])
		if err != nil {
			return nil, err
		}
		s.Done = append(s.Done, rec)
		done[m[1]] = true
	}
	for _, e := range ents {
		if m := shardStageRE.FindStringSubmatch(e.Name()); m != nil && !done[m[1]] {
			s.Started = append(s.Started, m[1])
		}
	}
	sort.Slice(s.Done, func(i, j int) bool {
		if s.Done[i].Of != s.Done[j].Of {
			return s.Done[i].Of < s.Done[j].Of
		}
		return s.Done[i].Index < s.Done[j].Index
	})
	sort.Strings(s.Started)
	return s, nil
}

// ReadShard reads the record shard index of of left in dir; nil when it has
// not finished.
func ReadShard(dir string, index, of int) (*ShardRecord, error) {
	part := ShardPart(index, of)
	rec, err := readShardRecord(filepath.Join(dir, ShardRecordName(part)), part)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return rec, err
}

func readShardRecord(path, part string) (*ShardRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec ShardRecord
	if err := strictUnmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("shard record %s is not valid: %v; remove it and run that shard again", path, err)
	}
	index, of, _ := parsePart(part)
	if rec.Kind != shardKind || rec.FormatVersion != FormatVersion || rec.Part != part || rec.Index != index || rec.Of != of {
		return nil, fmt.Errorf("shard record %s: kind %q version %d part %q: not a record of %s by this airlock; remove it and run that shard again", path, rec.Kind, rec.FormatVersion, rec.Part, part)
	}
	for _, mf := range rec.Manifests {
		if err := validDigest(mf.Digest); err != nil || digest.FromBytes(mf.Raw) != mf.Digest {
			return nil, fmt.Errorf("shard record %s: manifest %s does not match its digest: %w; remove the record and run that shard again", path, mf.Digest, ErrCorrupt)
		}
	}
	for _, b := range rec.Blobs {
		if err := validDigest(b.Digest); err != nil || b.Chunk < 1 || b.Chunk > len(rec.Chunks) || b.Offset < 0 || b.Size < 0 {
			return nil, fmt.Errorf("shard record %s: blob %s is not valid: %w", path, b.Digest, ErrCorrupt)
		}
	}
	for _, c := range rec.Chunks {
		if n := partChunkRE.FindStringSubmatch(c.Name); n == nil || n[1] != part {
			return nil, fmt.Errorf("shard record %s: chunk %q is not a chunk of %s: %w", path, c.Name, part, ErrCorrupt)
		}
	}
	return &rec, nil
}
