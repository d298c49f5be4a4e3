package archive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// stagingDirName is the hidden directory inside the archive directory where the
// Writer keeps verified blobs and its journal until Finish has written the chunks.
const stagingDirName = ".airlock-staging"

// WriterOptions configure a Writer.
type WriterOptions struct {
	// ChunkSize is the maximum size of a chunk file in bytes; 0 means
	// DefaultChunkSize. A blob larger than that gets a chunk of its own.
	ChunkSize int64
	// Shipped are blobs earlier archives already carried: they are not written, and
	// the archive records that it relies on them.
	Shipped ShippedSet
	// Logger receives warnings (oversized blobs) and progress; nil discards.
	Logger  *slog.Logger
	SignKey string // a private key (see Sign) the finished archive is signed with
	// Part, when set, makes the Writer write one part of a sharded archive
	// (ShardPart or FinishPart, see shard.go): its chunks are named after the
	// part, and FinishShard or FinishSharded ends it instead of Finish.
	Part string
	// Elsewhere are blobs another part of the same sharded archive writes: they
	// count as present and are not written here.
	Elsewhere endpoint.HeldElsewhere
	// Strict (--strict-archive) makes a blob larger than ChunkSize an error
	// instead of a chunk of its own.
	Strict bool
	// FreeSpace says how many bytes may still be written on the filesystem
	// holding path (CheckSpace); nil asks the filesystem.
	FreeSpace func(path string) (int64, error)
}

// Writer writes an archive. It implements endpoint.Destination: the copy engine
// puts blobs and manifests into it in any order and concurrently; each is verified
// and written into its slot in a chunk laid out before the copy (Expect), or
// staged under DIR/.airlock-staging. Finish then lays out the staged blobs in
// chunks (sorted by digest) after those, moves them into them, and ends every
// chunk with its index and trailer.
//
// A Writer on a directory holding the staging area of an interrupted run resumes:
// staged blobs and manifests count as present, and an interrupted Finish keeps the
// chunks it completed.
type Writer struct {
	dir, staging string
	chunkSize    int64
	strict       bool
	free         func(path string) (int64, error)
	shipped      ShippedSet
	log          *slog.Logger
	part         string
	elsewhere    endpoint.HeldElsewhere
	// fromShards are the blobs the shards' chunks hold, tail the shards'
	// chunks in order and shards their number (FinishSharded).
	fromShards map[digest.Digest]shardBlob
	tail       []tailChunk
	shards     int

	mu     sync.Mutex
	blobs  map[digest.Digest]*stagedBlob
	relied map[digest.Digest]*reliedBlob
	tags   map[tagKey]TagRecord
	// held are the manifests recorded under some reference in a repository,
	// keyed by repository and digest (setTag keeps it with tags).
	held     map[tagKey]bool
	journal  *os.File
	finished bool
	// completed are chunks an interrupted Finish finished writing (from finish.json).
	completed *finishJournal
	signKey   string // WriterOptions.SignKey
	// writing are the blobs whose partial file or slot a transfer is writing.
	writing map[digest.Digest]bool
	// pre are the chunks laid out before the copy (Expect, slots.go), for
	// chunk size preSize; slots where their blobs go, slotHeld how many bytes
	// of a blob cut off midway its slot holds.
	pre      []preChunk
	preSize  int64
	slots    map[digest.Digest]slot
	slotHeld map[digest.Digest]int64
	// regions are the running payload hashes of the pre-laid chunks, by
	// number (slothash.go); readBack counts the bytes Finish read back to
	// hash what they did not cover.
	regions  map[int]*regionHash
	readBack int64
	// pres are the blobs staged before the layout (prestaged.go).
	pres prestage
}

type stagedBlob struct {
	size  int64
	repos map[string]struct{}
	// chunk is set when the blob lives in a chunk: one completed by an
	// interrupted Finish (its staged copy was removed), or its slot in a chunk
	// laid out before the copy; offset is where its bytes start.
	chunk  string
	offset int64
	// unverified: written into its slot by an earlier process; Finish
	// verifies it again before it counts.
	unverified bool
}

type reliedBlob struct {
	size   int64
	repos  map[string]struct{}
	origin Origin
}

type tagKey struct{ repo, ref string }

// journalRecord is one line of DIR/.airlock-staging/journal.jsonl.
type journalRecord struct {
	Op        string        `json:"op"` // use, tag, relied, placed, held
	Digest    digest.Digest `json:"digest"`
	Size      int64         `json:"size,omitempty"`
	Repo      string        `json:"repo,omitempty"`
	Reference string        `json:"reference,omitempty"`
	MediaType string        `json:"mediaType,omitempty"`
}

// finishJournal records the chunks Finish completed, so that an interrupted Finish
// can be resumed without rewriting them.
type finishJournal struct {
	ArchiveID string           `json:"archiveID"`
	Chunks    []completedChunk `json:"chunks"`
}

type completedChunk struct {
	Record ChunkRecord `json:"record"`
	// BodySize is the length of blobs + index (the trailer follows).
	BodySize int64       `json:"bodySize"`
	Blobs    []IndexBlob `json:"blobs"`
}

// NewWriter opens dir for writing an archive, creating it if needed, and resumes
// the staging area of an interrupted run if there is one.
func NewWriter(dir string, opts WriterOptions) (*Writer, error) {
	if opts.ChunkSize < 0 {
		return nil, fmt.Errorf("archive chunk size %d: must be positive", opts.ChunkSize)
	}
	if opts.ChunkSize == 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := signerFor(opts.SignKey); err != nil { // before anything is copied
		return nil, err
	}
	if opts.FreeSpace == nil {
		opts.FreeSpace = filesystemFree
	}
	if opts.Part != "" && !validPart(opts.Part) {
		return nil, fmt.Errorf("archive part %q: not a shard part", opts.Part)
	}
	w := &Writer{
		dir:       dir,
		staging:   filepath.Join(dir, stagingName(opts.Part)),
		chunkSize: opts.ChunkSize,
		strict:    opts.Strict,
		free:      opts.FreeSpace,
		shipped:   opts.Shipped,
		log:       log,
		part:      opts.Part,
		elsewhere: opts.Elsewhere,
		signKey:   opts.SignKey,
		blobs:     map[digest.Digest]*stagedBlob{},
		relied:    map[digest.Digest]*reliedBlob{},
		tags:      map[tagKey]TagRecord{},
		held:      map[tagKey]bool{},
		writing:   map[digest.Digest]bool{},
		slots:     map[digest.Digest]slot{},
		slotHeld:  map[digest.Digest]int64{},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create archive directory: %w", err)
	}
	_, statErr := os.Stat(w.staging)
	resuming := statErr == nil
	if err := w.checkDir(resuming); err != nil {
		return nil, err
	}
	for _, d := range []string{filepath.Join(w.staging, "blobs", "sha256"), filepath.Join(w.staging, "tmp"), filepath.Join(w.staging, partialDirName)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create staging area: %w", err)
		}
	}
	if resuming {
		if err := w.load(); err != nil {
			return nil, err
		}
	}
	j, err := os.OpenFile(filepath.Join(w.staging, "journal.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open staging journal: %w", err)
	}
	w.journal = j
	return w, nil
}

// load reads back the staging area of an interrupted run.
func (w *Writer) load() error {
	// Leftover temporary files are useless (the partial blobs of interrupted
	// transfers, which are resumed, are kept in partialDirName).
	tmp := filepath.Join(w.staging, "tmp")
	if ents, err := os.ReadDir(tmp); err == nil {
		for _, e := range ents {
			_ = os.Remove(filepath.Join(tmp, e.Name()))
		}
	}
	blobDir := filepath.Join(w.staging, "blobs", "sha256")
	ents, err := os.ReadDir(blobDir)
	if err != nil {
		return fmt.Errorf("read staging area: %w", err)
	}
	for _, e := range ents {
		d := digest.NewDigestFromEncoded(digest.SHA256, e.Name())
		if d.Validate() != nil || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("read staging area: %w", err)
		}
		w.blobs[d] = &stagedBlob{size: info.Size(), repos: map[string]struct{}{}}
	}
	if b, err := os.ReadFile(filepath.Join(w.staging, "finish.json")); err == nil {
		var fj finishJournal
		if err := json.Unmarshal(b, &fj); err != nil {
			return fmt.Errorf("read %s: %w; remove the directory %s to start over", filepath.Join(w.staging, "finish.json"), err, w.staging)
		}
		var kept []completedChunk
		for _, c := range fj.Chunks {
			info, err := os.Stat(filepath.Join(w.dir, c.Record.Name))
			if err != nil || info.Size() < c.BodySize {
				// the chunk is gone or shorter than recorded: its blobs must still
				// be staged, or the run will fetch them again.
				continue
			}
			kept = append(kept, c)
			for _, b := range c.Blobs {
				if _, ok := w.blobs[b.Digest]; !ok {
					w.blobs[b.Digest] = &stagedBlob{size: b.Size, repos: map[string]struct{}{}, chunk: c.Record.Name, offset: b.Offset}
				}
			}
		}
		fj.Chunks = kept
		w.completed = &fj
	}
	if err := w.loadPreLayout(); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(w.staging, "journal.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read staging journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r journalRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // a torn last line of a killed run
		}
		switch r.Op {
		case "use":
			if b, ok := w.blobs[r.Digest]; ok {
				b.repos[r.Repo] = struct{}{}
			}
		case "tag":
			if _, ok := w.blobs[r.Digest]; ok {
				w.setTag(TagRecord{Repo: r.Repo, Reference: r.Reference, Digest: r.Digest, MediaType: r.MediaType})
			}
		case "placed":
			w.placed(r.Digest)
		case "held":
			if _, ok := w.slots[r.Digest]; ok {
				w.unplace(r.Digest)
				w.slotHeld[r.Digest] = r.Size
			}
		case "relied":
			if o, ok := w.shipped[r.Digest]; ok {
				w.addRelied(r.Repo, endpoint.Descriptor{Digest: r.Digest, Size: r.Size}, o)
			}
		}
	}
	return nil
}

// Close releases the Writer without finishing: the staging area stays, and a new
// Writer on the same directory resumes from it.
func (w *Writer) Close() error {
	w.waitMove(true)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.journal == nil {
		return nil
	}
	err := w.journal.Close()
	w.journal = nil
	return err
}

func (w *Writer) writeJournal(r journalRecord) error {
	if w.journal == nil {
		return ErrFinished
	}
	b, err := marshal(r)
	if err != nil {
		return err
	}
	if _, err := w.journal.Write(b); err != nil {
		return fmt.Errorf("write staging journal: %w", err)
	}
	return nil
}

// addRelied records (lock held) that repo needs blob d shipped by origin o.
func (w *Writer) addRelied(repo string, d endpoint.Descriptor, o Origin) bool {
	r, ok := w.relied[d.Digest]
	if !ok {
		r = &reliedBlob{size: d.Size, repos: map[string]struct{}{}, origin: o}
		w.relied[d.Digest] = r
	}
	if _, ok := r.repos[repo]; ok {
		return false
	}
	r.repos[repo] = struct{}{}
	return true
}

// use records (lock held) that repo uses staged blob d.
func (w *Writer) use(repo string, d digest.Digest) error {
	b := w.blobs[d]
	if _, ok := b.repos[repo]; ok {
		return nil
	}
	b.repos[repo] = struct{}{}
	return w.writeJournal(journalRecord{Op: "use", Digest: d, Repo: repo})
}

// present reports (lock held) whether blob d is staged or shipped, recording the use.
func (w *Writer) present(repo string, d endpoint.Descriptor) (bool, error) {
	if w.finished {
		return false, ErrFinished
	}
	if w.elsewhere.Has(d.Digest) {
		return true, nil // another part of the archive writes it
	}
	if _, ok := w.blobs[d.Digest]; ok {
		return true, w.use(repo, d.Digest)
	}
	if o, ok := w.shipped[d.Digest]; ok {
		if w.addRelied(repo, d, o) {
			return true, w.writeJournal(journalRecord{Op: "relied", Digest: d.Digest, Size: d.Size, Repo: repo})
		}
		return true, nil
	}
	return false, nil
}

// BlobExists reports whether blob d is already staged in the archive, or was
// shipped by an earlier archive (recorded as relied on).
func (w *Writer) BlobExists(ctx context.Context, repo string, d endpoint.Descriptor) (bool, error) {
	if err := validDigest(d.Digest); err != nil {
		return false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.present(repo, d)
}

// MountBlob makes blob d available to repo when the archive already has it: blobs
// are shared by every repository of an archive.
func (w *Writer) MountBlob(ctx context.Context, repo, from string, d endpoint.Descriptor) (bool, error) {
	return w.BlobExists(ctx, repo, d)
}

func (w *Writer) stagedPath(d digest.Digest) string {
	return filepath.Join(w.staging, "blobs", "sha256", d.Encoded())
}

// ManifestExists reports whether the archive already holds manifest d under
// reference in repo; with reference d itself, under any reference (a manifest
// pushed under a tag is held by its digest too, as in a registry).
func (w *Writer) ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return false, ErrFinished
	}
	if reference == d.String() && w.held[tagKey{repo, reference}] {
		return true, nil
	}
	t, ok := w.tags[tagKey{repo, reference}]
	return ok && t.Digest == d, nil
}

// setTag records t; w.mu held (or w not shared yet).
func (w *Writer) setTag(t TagRecord) {
	w.tags[tagKey{t.Repo, t.Reference}] = t
	w.held[tagKey{t.Repo, t.Digest.String()}] = true
}

// PutManifest stores manifest m (as a blob, by digest) and records it under
// reference in repo. Manifests are always written, even when an earlier archive
// shipped them: they are small and the reader serves images from them.
func (w *Writer) PutManifest(ctx context.Context, repo, reference string, m endpoint.Manifest) error {
	got := digest.FromBytes(m.Raw)
	if m.Digest != "" && m.Digest != got {
		return fmt.Errorf("manifest %s:%s: content has digest %s, expected %s: %w", repo, reference, got, m.Digest, ErrCorrupt)
	}
	if strings.HasPrefix(reference, "sha256:") && digest.Digest(reference) != got {
		return fmt.Errorf("manifest %s@%s: content has digest %s: %w", repo, reference, got, ErrCorrupt)
	}
	if reference == "" {
		reference = got.String()
	}
	mt := m.MediaType
	if mt == "" {
		mt = oci.MediaTypeOf("", m.Raw)
	}
	d := endpoint.Descriptor{MediaType: mt, Digest: got, Size: int64(len(m.Raw))}
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return ErrFinished
	}
	_, staged := w.blobs[got]
	w.mu.Unlock()
	if !staged {
		if err := w.stage(ctx, d, bytes.NewReader(m.Raw), 0, nil); err != nil {
			return fmt.Errorf("manifest %s:%s: %w", repo, reference, err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return ErrFinished
	}
	if _, ok := w.blobs[got]; !ok {
		w.blobs[got] = &stagedBlob{size: d.Size, repos: map[string]struct{}{}}
	}
	if err := w.use(repo, got); err != nil {
		return err
	}
	k := tagKey{repo, reference}
	if t, ok := w.tags[k]; ok && t.Digest == got {
		return nil
	}
	w.setTag(TagRecord{Repo: repo, Reference: reference, Digest: got, MediaType: mt})
	return w.writeJournal(journalRecord{Op: "tag", Digest: got, Repo: repo, Reference: reference, MediaType: mt})
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
