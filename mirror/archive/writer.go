package archive

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/opencontainers/go-digest"
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
	Logger *slog.Logger
}

// Writer writes an archive. It implements endpoint.Destination: the copy engine
// puts blobs and manifests into it in any order and concurrently; each is verified
// and staged under DIR/.airlock-staging. Finish then lays out the chunks
// deterministically (blobs sorted by digest) and moves the staged blobs into them.
//
// A Writer on a directory holding the staging area of an interrupted run resumes:
// staged blobs and manifests count as present, and an interrupted Finish keeps the
// chunks it completed.
type Writer struct {
	dir, staging string
	chunkSize    int64
	shipped      ShippedSet
	log          *slog.Logger

	mu       sync.Mutex
	blobs    map[digest.Digest]*stagedBlob
	relied   map[digest.Digest]*reliedBlob
	tags     map[tagKey]TagRecord
	journal  *os.File
	finished bool
	// completed are chunks an interrupted Finish finished writing (from finish.json).
	completed *finishJournal
}

type stagedBlob struct {
	size  int64
	repos map[string]struct{}
	// chunk is set when the blob lives in a chunk completed by an interrupted Finish
	// (its staged copy was removed); offset is where its bytes start.
	chunk  string
	offset int64
}

type reliedBlob struct {
	size   int64
	repos  map[string]struct{}
	origin Origin
}

type tagKey struct{ repo, ref string }

// journalRecord is one line of DIR/.airlock-staging/journal.jsonl.
type journalRecord struct {
	Op        string        `json:"op"` // use, tag, relied
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
	w := &Writer{
		dir:       dir,
		staging:   filepath.Join(dir, stagingDirName),
		chunkSize: opts.ChunkSize,
		shipped:   opts.Shipped,
		log:       log,
		blobs:     map[digest.Digest]*stagedBlob{},
		relied:    map[digest.Digest]*reliedBlob{},
		tags:      map[tagKey]TagRecord{},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create archive directory: %w", err)
	}
	_, statErr := os.Stat(w.staging)
	resuming := statErr == nil
	if !resuming {
		chunks, err := listChunks(dir)
		if err != nil {
			return nil, err
		}
		if len(chunks) > 0 {
			return nil, fmt.Errorf("%s: %w (%d chunks); a finished archive is never rewritten: write into an empty directory", dir, ErrArchiveExists, len(chunks))
		}
	}
	for _, d := range []string{filepath.Join(w.staging, "blobs", "sha256"), filepath.Join(w.staging, "tmp")} {
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
	// Leftover temporary files of interrupted transfers are useless.
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
				w.tags[tagKey{r.Repo, r.Reference}] = TagRecord{Repo: r.Repo, Reference: r.Reference, Digest: r.Digest, MediaType: r.MediaType}
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

// PutBlob verifies and stages blob d. A blob already staged or shipped is not read again.
func (w *Writer) PutBlob(ctx context.Context, repo string, d endpoint.Descriptor, r io.Reader) error {
	if err := validDigest(d.Digest); err != nil {
		return err
	}
	if d.Size < 0 {
		return fmt.Errorf("blob %s: negative size %d", d.Digest, d.Size)
	}
	w.mu.Lock()
	ok, err := w.present(repo, d)
	w.mu.Unlock()
	if ok || err != nil {
		return err
	}
	if err := w.stage(ctx, d, r); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return ErrFinished
	}
	if _, ok := w.blobs[d.Digest]; !ok {
		w.blobs[d.Digest] = &stagedBlob{size: d.Size, repos: map[string]struct{}{}}
	}
	return w.use(repo, d.Digest)
}

// stage copies r into the staging area, verifying size and digest, and renames it
// into place only when both match.
func (w *Writer) stage(ctx context.Context, d endpoint.Descriptor, r io.Reader) error {
	tmp, err := os.CreateTemp(filepath.Join(w.staging, "tmp"), d.Digest.Encoded()+".*")
	if err != nil {
		return fmt.Errorf("stage blob %s: %w", d.Digest, err)
	}
	defer os.Remove(tmp.Name())
	vd := digest.SHA256.Digester()
	// Read one byte more than announced to detect oversized streams.
	n, err := io.CopyBuffer(io.MultiWriter(tmp, vd.Hash()), &ctxReader{ctx, io.LimitReader(r, d.Size+1)}, make([]byte, 1<<20))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("stage blob %s: %w", d.Digest, err)
	}
	if n != d.Size {
		return fmt.Errorf("blob %s: read %d bytes, descriptor says %d: %w", d.Digest, n, d.Size, ErrCorrupt)
	}
	if got := vd.Digest(); got != d.Digest {
		return fmt.Errorf("blob %s: content has digest %s: %w", d.Digest, got, ErrCorrupt)
	}
	if err := os.Rename(tmp.Name(), w.stagedPath(d.Digest)); err != nil {
		return fmt.Errorf("stage blob %s: %w", d.Digest, err)
	}
	return nil
}

func (w *Writer) stagedPath(d digest.Digest) string {
	return filepath.Join(w.staging, "blobs", "sha256", d.Encoded())
}

// ManifestExists reports whether the archive already holds manifest d under reference in repo.
func (w *Writer) ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return false, ErrFinished
	}
	t, ok := w.tags[tagKey{repo, reference}]
	return ok && t.Digest == d, nil
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
		if err := w.stage(ctx, d, bytes.NewReader(m.Raw)); err != nil {
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
	w.tags[k] = TagRecord{Repo: repo, Reference: reference, Digest: got, MediaType: mt}
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
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

// Finish writes the chunks from the staged blobs and returns the archive manifest.
// Only the images of meta.Images go into the archive (their tags, the manifests
// and blobs they reach): what an earlier, failed run staged for images the plan no
// longer has is left out, and removed with the staging area.
// The chunk layout depends only on the content (blobs sorted by digest, fixed tar
// headers, no timestamps), so the same content gives byte-identical chunks. After
// each chunk is written and synced, the staged copies of its blobs are removed, so
// the disk holds at most one chunk's worth of data twice. An interrupted Finish can
// be resumed by a new Writer on the same directory.
func (w *Writer) Finish(ctx context.Context, meta Meta) (*Manifest, error) {
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return nil, ErrFinished
	}
	w.finished = true
	w.mu.Unlock()

	m, err := w.buildManifest(meta)
	if err != nil {
		return nil, err
	}
	plan, err := w.layout(m)
	if err != nil {
		return nil, err
	}
	if err := w.writeChunks(ctx, m, plan); err != nil {
		return nil, err
	}
	if w.journal != nil {
		_ = w.journal.Close()
		w.journal = nil
	}
	if err := os.RemoveAll(w.staging); err != nil {
		return nil, fmt.Errorf("remove staging area: %w", err)
	}
	syncDir(w.dir)
	return m, nil
}

// buildManifest assembles the manifest (without layout) from what the plan's
// images reach, and checks that the archive is complete: every image, its tags and
// every blob its manifests reference is in the archive or relied on.
func (w *Writer) buildManifest(meta Meta) (*Manifest, error) {
	m := &Manifest{Kind: manifestKind, FormatVersion: FormatVersion, ChunkSize: w.chunkSize, Batch: meta.Batch, BuildsOn: slices.Clone(meta.BuildsOn)}
	if len(meta.Config) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, meta.Config); err != nil {
			return nil, fmt.Errorf("archive configuration is not valid JSON: %w", err)
		}
		m.Config = buf.Bytes()
	}
	for _, im := range meta.Images {
		im.Tags = sortedStrings(im.Tags)
		im.Platforms = sortedStrings(im.Platforms)
		m.Images = append(m.Images, im)
	}
	sort.Slice(m.Images, func(i, j int) bool {
		a, b := m.Images[i], m.Images[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.Destination != b.Destination {
			return a.Destination < b.Destination
		}
		return a.Digest < b.Digest
	})
	for _, c := range meta.Catalogs {
		c.Packages = sortedStrings(c.Packages)
		m.Catalogs = append(m.Catalogs, c)
	}
	sort.Slice(m.Catalogs, func(i, j int) bool {
		if m.Catalogs[i].Source != m.Catalogs[j].Source {
			return m.Catalogs[i].Source < m.Catalogs[j].Source
		}
		return m.Catalogs[i].Destination < m.Catalogs[j].Destination
	})
	if m.Images == nil {
		m.Images = []ImageRecord{}
	}
	if m.Catalogs == nil {
		m.Catalogs = []CatalogRecord{}
	}
	// Only what the plan names goes into the archive: the staging area may also
	// hold images of an earlier, failed run that the plan no longer has.
	r, err := w.reachable(m.Images)
	if err != nil {
		return nil, err
	}
	m.Tags = r.tags
	sort.Slice(m.Tags, func(i, j int) bool {
		if m.Tags[i].Repo != m.Tags[j].Repo {
			return m.Tags[i].Repo < m.Tags[j].Repo
		}
		return m.Tags[i].Reference < m.Tags[j].Reference
	})
	if m.Tags == nil {
		m.Tags = []TagRecord{}
	}
	m.Blobs = []BlobRecord{}
	m.ReliesOn = []ReliedRecord{}
	var left int
	var leftBytes int64
	for d, b := range w.blobs {
		if _, ok := r.repos[d]; !ok {
			left++
			leftBytes += b.size
		}
	}
	if left > 0 {
		w.log.Info("staged blobs that no image of the plan uses are left out of the archive", "blobs", left, "bytes", leftBytes)
	}
	for _, d := range slices.Sorted(maps.Keys(r.repos)) {
		repos := r.repos[d]
		b, staged := w.blobs[d]
		o, shipped := w.shipped[d]
		switch {
		case staged && (r.manifests[d] || !shipped):
			// Manifests are always written, even when an earlier archive shipped them.
			m.Blobs = append(m.Blobs, BlobRecord{Digest: d, Size: b.size, Repos: sortedKeys(repos)})
		case staged:
			// staged by an earlier run before the shipped set said so: do not ship it twice.
			m.ReliesOn = append(m.ReliesOn, reliedRecord(d, b.size, repos, o))
		case w.relied[d] != nil:
			m.ReliesOn = append(m.ReliesOn, reliedRecord(d, w.relied[d].size, repos, w.relied[d].origin))
		default:
			p := r.parent[d]
			return nil, fmt.Errorf("manifest %s in %s references blob %s that was neither written nor shipped by an earlier archive; run mirror-to-disk again", p.ref, p.repo, d)
		}
	}
	sort.Slice(m.Blobs, func(i, j int) bool { return m.Blobs[i].Digest < m.Blobs[j].Digest })
	sort.Slice(m.ReliesOn, func(i, j int) bool { return m.ReliesOn[i].Digest < m.ReliesOn[j].Digest })

	// The archive id is a digest of the content, so that the same content gives
	// the same id and byte-identical chunks.
	idSrc, err := json.Marshal(struct {
		F    int
		N    int
		On   []BatchRef
		Size int64
		C    json.RawMessage
		I    []ImageRecord
		Cat  []CatalogRecord
		T    []TagRecord
		B    []BlobRecord
		R    []ReliedRecord
	}{FormatVersion, m.Batch, m.BuildsOn, w.chunkSize, m.Config, m.Images, m.Catalogs, m.Tags, m.Blobs, m.ReliesOn})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(idSrc)
	m.ArchiveID = hex.EncodeToString(sum[:16])
	return m, nil
}

// readStaged reads a small staged blob (a manifest) wherever it lives.
func (w *Writer) readStaged(d digest.Digest) ([]byte, error) {
	b := w.blobs[d]
	if b == nil {
		return nil, fmt.Errorf("manifest %s: %w", d, ErrNotFound)
	}
	if b.size > maxIndexSize {
		return nil, fmt.Errorf("manifest %s: %d bytes is too large", d, b.size)
	}
	rc, err := w.openBlob(d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read staged manifest %s: %w", d, err)
	}
	if digest.FromBytes(raw) != d {
		return nil, fmt.Errorf("staged manifest %s is corrupt: %w; remove %s and run again", d, ErrCorrupt, w.stagedPath(d))
	}
	return raw, nil
}

// openBlob opens a staged blob, from the staging area or a completed chunk.
func (w *Writer) openBlob(d digest.Digest) (io.ReadCloser, error) {
	b := w.blobs[d]
	if b.chunk == "" {
		f, err := os.Open(w.stagedPath(d))
		if err != nil {
			return nil, fmt.Errorf("open staged blob %s: %w; run mirror-to-disk again to fetch it", d, err)
		}
		return f, nil
	}
	f, err := os.Open(filepath.Join(w.dir, b.chunk))
	if err != nil {
		return nil, fmt.Errorf("open chunk %s for blob %s: %w", b.chunk, d, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, b.offset, b.size), f}, nil
}

// manifestRefs lists what a manifest stored in the archive references: child
// manifests and the blobs (config and distributable layers) to carry. The subject
// (OCI referrers) is not followed: the copy engine does not copy it, and a
// referrer is in the archive only as an image of the plan itself.
func manifestRefs(raw []byte) (children, blobs []digest.Digest, err error) {
	refs, err := oci.Parse(oci.Manifest{Digest: digest.FromBytes(raw), Raw: raw})
	if err != nil {
		return nil, nil, err
	}
	for _, c := range refs.Manifests {
		children = append(children, c.Digest)
	}
	for _, b := range refs.Blobs {
		blobs = append(blobs, b.Digest)
	}
	return children, blobs, nil
}

// manifestReferences returns the digests a manifest or index references
// (children, config, layers); nil when it cannot be parsed.
func manifestReferences(raw []byte) []digest.Digest {
	refs, err := oci.Parse(oci.Manifest{Digest: digest.FromBytes(raw), Raw: raw})
	if err != nil {
		return nil
	}
	return refs.Digests()
}

// reachSet is what the images of the plan reach in the staging area.
type reachSet struct {
	// tags are the staged tags the plan names: each image's tags and digest
	// reference in its destination, and its child manifests by digest.
	tags []TagRecord
	// repos maps every reachable manifest and blob to the repositories that use it.
	repos map[digest.Digest]map[string]struct{}
	// manifests are the reachable manifests (they are always written).
	manifests map[digest.Digest]bool
	// parent names a manifest (repo, digest) that references a digest, for errors.
	parent map[digest.Digest]tagKey
}

// reachable walks the manifests of the plan's images from their staged tags and
// collects what they reference. It fails when an image's manifest, tag or child
// manifest was not written.
func (w *Writer) reachable(images []ImageRecord) (*reachSet, error) {
	r := &reachSet{repos: map[digest.Digest]map[string]struct{}{}, manifests: map[digest.Digest]bool{}, parent: map[digest.Digest]tagKey{}}
	kept := map[tagKey]bool{}
	keep := func(k tagKey) {
		if !kept[k] {
			kept[k] = true
			r.tags = append(r.tags, w.tags[k])
		}
	}
	use := func(d digest.Digest, repo string, from tagKey) {
		if r.repos[d] == nil {
			r.repos[d] = map[string]struct{}{}
		}
		r.repos[d][repo] = struct{}{}
		if _, ok := r.parent[d]; !ok {
			r.parent[d] = from
		}
	}
	type refsOf struct{ children, blobs []digest.Digest }
	parsed := map[digest.Digest]refsOf{}
	visited := map[tagKey]bool{}
	for _, im := range images {
		repo := im.Destination
		notWritten := fmt.Errorf("image %s (%s): manifest %s was never written to the archive; the copy did not finish, run mirror-to-disk again", im.Source, im.Destination, im.Digest)
		if _, ok := w.blobs[im.Digest]; !ok {
			return nil, notWritten
		}
		found := false
		if k := (tagKey{repo, im.Digest.String()}); w.tags[k].Digest == im.Digest {
			keep(k)
			found = true
		}
		for _, tag := range im.Tags {
			k := tagKey{repo, tag}
			t, ok := w.tags[k]
			if !ok {
				return nil, fmt.Errorf("image %s (%s): tag %s was never written to the archive; the copy did not finish, run mirror-to-disk again", im.Source, im.Destination, tag)
			}
			if t.Digest != im.Digest {
				return nil, fmt.Errorf("image %s (%s): tag %s holds manifest %s, not %s; run mirror-to-disk again", im.Source, im.Destination, tag, t.Digest, im.Digest)
			}
			keep(k)
			found = true
		}
		if !found {
			return nil, notWritten
		}
		type step struct {
			d    digest.Digest
			from tagKey // the manifest that references d
		}
		stack := []step{{im.Digest, tagKey{repo, im.Digest.String()}}}
		for len(stack) > 0 {
			st := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			md := st.d
			k := tagKey{repo, md.String()}
			if visited[k] {
				continue
			}
			visited[k] = true
			r.manifests[md] = true
			use(md, repo, st.from)
			if w.tags[k].Digest == md {
				keep(k)
			}
			refs, ok := parsed[md]
			if !ok {
				var err error
				if _, staged := w.blobs[md]; !staged {
					return nil, fmt.Errorf("image %s (%s): manifest %s references manifest %s that was never written to the archive; run mirror-to-disk again", im.Source, im.Destination, st.from.ref, md)
				}
				raw, err := w.readStaged(md)
				if err != nil {
					return nil, err
				}
				if refs.children, refs.blobs, err = manifestRefs(raw); err != nil {
					return nil, fmt.Errorf("image %s (%s): manifest %s: %w", im.Source, im.Destination, md, err)
				}
				parsed[md] = refs
			}
			for _, c := range refs.children {
				stack = append(stack, step{c, k})
			}
			for _, b := range refs.blobs {
				use(b, repo, k)
			}
		}
	}
	return r, nil
}

func reliedRecord(d digest.Digest, size int64, repos map[string]struct{}, o Origin) ReliedRecord {
	o.Repos = sortedStrings(o.Repos)
	return ReliedRecord{Digest: d, Size: size, Repos: sortedKeys(repos), Origin: o}
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
func (w *Writer) layout(m *Manifest) ([]plannedChunk, error) {
	hdrs := make([][]byte, len(m.Blobs))
	for i, b := range m.Blobs {
		h, err := headerBytes(blobEntryName(b.Digest), b.Size)
		if err != nil {
			return nil, err
		}
		hdrs[i] = h
	}
	var reserve int64
	for iter := 0; ; iter++ {
		var plan []plannedChunk
		cur := plannedChunk{number: 1}
		var entriesLen int64
		for i, b := range m.Blobs {
			entryLen := int64(len(hdrs[i])) + b.Size + padding(b.Size)
			ib, _ := json.Marshal(IndexBlob{Digest: b.Digest, Size: b.Size, Offset: math.MaxInt64})
			fits := cur.payloadSize+entryLen+indexEntryBound(entriesLen+int64(len(ib)), len(cur.blobs)+1)+reserve+eofSize <= w.chunkSize
			if !fits && len(cur.blobs) > 0 {
				plan = append(plan, cur)
				cur = plannedChunk{number: cur.number + 1}
				entriesLen = 0
			}
			cur.blobs = append(cur.blobs, plannedBlob{d: b.Digest, size: b.Size, hdr: hdrs[i], offset: cur.payloadSize + int64(len(hdrs[i]))})
			cur.payloadSize += entryLen
			entriesLen += int64(len(ib))
		}
		plan = append(plan, cur)
		if len(plan) > maxChunkCount {
			return nil, fmt.Errorf("archive needs %d chunks, more than %d: raise the archive size", len(plan), maxChunkCount)
		}
		// Fill the manifest as the plan says, with placeholder hashes of the final length.
		pos := map[digest.Digest]*plannedBlob{}
		m.Chunks = m.Chunks[:0]
		for ci := range plan {
			c := &plan[ci]
			for bi := range c.blobs {
				pos[c.blobs[bi].d] = &c.blobs[bi]
			}
			m.Chunks = append(m.Chunks, ChunkRecord{Name: ChunkName(c.number), Number: c.number, Blobs: len(c.blobs),
				PayloadSize: c.payloadSize, PayloadSHA256: strings.Repeat("0", 64), IndexSHA256: strings.Repeat("0", 64)})
		}
		for i := range m.Blobs {
			p := pos[m.Blobs[i].Digest]
			m.Blobs[i].Offset = p.offset
		}
		chunkOf := map[digest.Digest]int{}
		for _, c := range plan {
			for _, b := range c.blobs {
				chunkOf[b.d] = c.number
			}
		}
		for i := range m.Blobs {
			m.Blobs[i].Chunk = chunkOf[m.Blobs[i].Digest]
		}
		mb, err := marshal(m)
		if err != nil {
			return nil, err
		}
		need := blockSize + int64(len(mb)) + padding(int64(len(mb))) + 2*blockSize // manifest + its sha256 entry
		if need <= reserve {
			for _, c := range plan {
				if len(c.blobs) != 1 {
					continue
				}
				b := c.blobs[0]
				ib, _ := json.Marshal(IndexBlob{Digest: b.d, Size: b.size, Offset: math.MaxInt64})
				if c.payloadSize+indexEntryBound(int64(len(ib)), 1)+reserve+eofSize > w.chunkSize {
					const gib = 1 << 30
					w.log.Warn("blob is larger than the archive chunk size; it gets a chunk of its own",
						"blob", b.d, "size", b.size, "chunk", ChunkName(c.number), "chunkSize", w.chunkSize,
						"recommendedArchiveSizeGiB", (b.size+gib-1)/gib+1)
				}
			}
			return plan, nil
		}
		reserve = need
		if iter > 50 {
			return nil, fmt.Errorf("archive layout does not converge for chunk size %d: raise the archive size", w.chunkSize)
		}
	}
}

// writeChunks writes every chunk body (blobs, index), then the trailers (manifest in
// the first and last chunk, tar end), syncing each file.
func (w *Writer) writeChunks(ctx context.Context, m *Manifest, plan []plannedChunk) error {
	// Chunks of an interrupted Finish that match the plan are kept as they are.
	kept := map[int]completedChunk{}
	if w.completed != nil && w.completed.ArchiveID == m.ArchiveID {
		for _, c := range w.completed.Chunks {
			n := c.Record.Number
			if n < 1 || n > len(plan) || !sameBlobs(c.Blobs, plan[n-1].blobs) {
				continue
			}
			kept[n] = c
		}
	}
	// Blobs that live only in chunks that are not kept go back to the staging area.
	if w.completed != nil {
		for _, c := range w.completed.Chunks {
			if _, ok := kept[c.Record.Number]; ok {
				continue
			}
			if err := w.unstage(ctx, c.Record.Name); err != nil {
				return err
			}
		}
	}
	// Remove chunk files of this unfinished archive that the plan does not keep (the
	// half-written chunk of an interrupted Finish, chunks beyond the plan). There
	// are none of a finished archive: NewWriter refuses a finished archive.
	existing, err := listChunks(w.dir)
	if err != nil {
		return err
	}
	for _, name := range existing {
		n, _ := chunkNumber(name)
		if c, ok := kept[n]; ok && c.Record.Name == name {
			continue
		}
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil {
			return fmt.Errorf("remove old chunk: %w", err)
		}
	}
	fj := finishJournal{ArchiveID: m.ArchiveID}
	for n := 1; n <= len(plan); n++ {
		if c, ok := kept[n]; ok {
			fj.Chunks = append(fj.Chunks, c)
		}
	}
	if err := w.saveFinishJournal(&fj); err != nil {
		return err
	}
	bodies := make([]completedChunk, len(plan))
	for i, c := range plan {
		if k, ok := kept[c.number]; ok {
			bodies[i] = k
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		cc, err := w.writeBody(ctx, m.ArchiveID, c)
		if err != nil {
			return err
		}
		bodies[i] = cc
		fj.Chunks = append(fj.Chunks, cc)
		if err := w.saveFinishJournal(&fj); err != nil {
			return err
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
	for i := range m.Chunks {
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
		err = w.stage(ctx, endpoint.Descriptor{Digest: d, Size: b.size}, rc)
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
	name := ChunkName(c.number)
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
		n, err := io.CopyBuffer(io.MultiWriter(out, vd.Hash()), &ctxReader{ctx, io.LimitReader(rc, b.size)}, buf)
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

// entryBytes returns a whole tar entry (header, data, padding) for a small file.
func entryBytes(name string, data []byte) ([]byte, error) {
	h, err := headerBytes(name, int64(len(data)))
	if err != nil {
		return nil, err
	}
	out := append(h, data...)
	return append(out, make([]byte, padding(int64(len(data))))...), nil
}

// writeTrailer truncates chunk path to its body and appends the manifest entry
// (first and last chunk) and the tar end marker, then syncs.
func writeTrailer(path string, bodySize int64, manifest []byte, withManifest bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open chunk %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	if err := f.Truncate(bodySize); err != nil {
		return fmt.Errorf("chunk %s: %w", filepath.Base(path), err)
	}
	var tail []byte
	if withManifest {
		if tail, err = entryBytes(manifestName, manifest); err != nil {
			return err
		}
		sum := sha256.Sum256(manifest)
		se, err := entryBytes(manifestSum, []byte(hex.EncodeToString(sum[:])+"\n"))
		if err != nil {
			return err
		}
		tail = append(tail, se...)
	}
	tail = append(tail, make([]byte, eofSize)...)
	if _, err := f.WriteAt(tail, bodySize); err != nil {
		return fmt.Errorf("write chunk %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync chunk %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

// listChunks returns the chunk file names in dir, sorted.
func listChunks(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read archive directory: %w", err)
	}
	var out []string
	for _, e := range ents {
		if _, ok := chunkNumber(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0)
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
