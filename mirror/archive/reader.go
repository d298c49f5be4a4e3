package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/opencontainers/go-digest"
)

// chunkScan is what a strict pass over a chunk's tar headers found.
type chunkScan struct {
	name       string
	number     int
	size       int64
	blobs      []IndexBlob
	index      *ChunkIndex
	indexSHA   string
	payloadEnd int64
	manifest   []byte // nil when the chunk holds no manifest
	// manifestErr is set when the manifest copy is present but damaged.
	manifestErr error
}

func chunkErr(name string, d digest.Digest, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if d != "" {
		return fmt.Errorf("chunk %s: blob %s: %s: %w", name, d, msg, ErrCorrupt)
	}
	return fmt.Errorf("chunk %s: %s: %w", name, msg, ErrCorrupt)
}

// openChunk opens the chunk at path for reading. Anything but a regular file (a
// FIFO, a device, a folder; a symlink is followed) is refused without being
// opened: opening a FIFO would block until something writes to it. The file is
// opened non-blocking and checked again, in case it was replaced meanwhile.
func openChunk(path string) (*os.File, error) {
	name := filepath.Base(path)
	notRegular := func(m fs.FileMode) error {
		return chunkErr(name, "", "%s is a %s, not a regular file: airlock reads only regular files from an archive folder; copy the chunk again from the source side", path, fileKind(m))
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", name, err)
	}
	if !info.Mode().IsRegular() {
		return nil, notRegular(info.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", name, err)
	}
	if info, err = f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", name, err)
		}
		return nil, notRegular(info.Mode())
	}
	return f, nil
}

// fileKind names the type of a file mode for people.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsDir():
		return "folder"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	default:
		return "special file"
	}
}

// scanChunk reads every tar header of chunk f (seeking over the data) and checks
// the structure: only canonical regular-file entries named blobs/sha256/<hex>, then
// airlock/index.json, then optionally the manifest and its checksum, then the tar
// end and nothing after it. It reads the index and the manifest, and checks the
// index against the entries. Blob contents are not read.
func scanChunk(f *os.File, name string) (*chunkScan, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", name, err)
	}
	s := &chunkScan{name: name, size: info.Size()}
	s.number, _ = chunkNumber(name)
	if s.size < eofSize {
		return nil, chunkErr(name, "", "only %d bytes: the chunk is truncated or not an airlock chunk", s.size)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("chunk %s: %w", name, err)
	}
	tr := tar.NewReader(f)
	var entryStart int64
	var last digest.Digest // the blob before the current position, for error messages
	var manifestSumText []byte
	seen := map[digest.Digest]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if last != "" && s.index == nil {
				return nil, chunkErr(name, last, "tar entry after this blob is unreadable (%v): the chunk is truncated or damaged", err)
			}
			return nil, chunkErr(name, "", "tar entry at offset %d is unreadable: %v", entryStart, err)
		}
		dataOff, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", name, err)
		}
		ename := hdr.Name
		var d digest.Digest
		if strings.HasPrefix(ename, blobPrefix) {
			d = digest.NewDigestFromEncoded(digest.SHA256, strings.TrimPrefix(ename, blobPrefix))
		}
		switch {
		case strings.HasPrefix(ename, "/"):
			return nil, chunkErr(name, d, "tar entry %q has an absolute path", ename)
		case hasDotDot(ename):
			return nil, chunkErr(name, d, "tar entry %q escapes the archive with ..", ename)
		case hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink:
			return nil, chunkErr(name, d, "tar entry %q is a link to %q; airlock chunks hold only regular files", ename, hdr.Linkname)
		case hdr.Typeflag != tar.TypeReg:
			return nil, chunkErr(name, d, "tar entry %q has type %q; airlock chunks hold only regular files", ename, hdr.Typeflag)
		case hdr.Size < 0 || hdr.Size > s.size-dataOff:
			return nil, chunkErr(name, d, "tar entry %q claims %d bytes but only %d remain: the chunk is truncated or the header is oversized", ename, hdr.Size, s.size-dataOff)
		}
		hlen := dataOff - entryStart
		if hlen < blockSize || hlen > 16*blockSize {
			return nil, chunkErr(name, d, "tar entry %q has a %d-byte header, not an airlock header", ename, hlen)
		}
		want, err := headerBytes(ename, hdr.Size)
		if err != nil {
			return nil, chunkErr(name, d, "tar entry %q: %v", ename, err)
		}
		got := make([]byte, hlen)
		if _, err := f.ReadAt(got, entryStart); err != nil {
			return nil, fmt.Errorf("chunk %s: %w", name, err)
		}
		if !bytes.Equal(got, want) {
			return nil, chunkErr(name, d, "tar header of %q is not the canonical airlock header (damaged, or not written by airlock)", ename)
		}
		switch {
		case d != "":
			if d.Validate() != nil || d.Encoded() != strings.ToLower(d.Encoded()) {
				return nil, chunkErr(name, "", "tar entry %q is not a sha256 blob name", ename)
			}
			if s.index != nil {
				return nil, chunkErr(name, d, "blob entry after the chunk index")
			}
			if seen[d] {
				return nil, chunkErr(name, d, "blob appears twice")
			}
			seen[d] = true
			s.blobs = append(s.blobs, IndexBlob{Digest: d, Size: hdr.Size, Offset: dataOff})
			last = d
		case ename == indexName:
			if s.index != nil {
				return nil, chunkErr(name, "", "two chunk indexes")
			}
			raw, err := readSmall(tr, hdr.Size)
			if err != nil {
				return nil, chunkErr(name, "", "chunk index: %v", err)
			}
			var idx ChunkIndex
			if err := strictUnmarshal(raw, &idx); err != nil {
				return nil, chunkErr(name, "", "chunk index is not valid: %v", err)
			}
			sum := sha256.Sum256(raw)
			s.index, s.indexSHA, s.payloadEnd = &idx, hex.EncodeToString(sum[:]), entryStart
		case ename == manifestName:
			if s.index == nil || s.manifest != nil {
				return nil, chunkErr(name, "", "archive manifest out of place")
			}
			raw, err := readSmall(tr, hdr.Size)
			if err != nil {
				return nil, chunkErr(name, "", "archive manifest: %v", err)
			}
			s.manifest = raw
		case ename == manifestSum:
			if s.manifest == nil || manifestSumText != nil {
				return nil, chunkErr(name, "", "archive manifest checksum out of place")
			}
			raw, err := readSmall(tr, min(hdr.Size, 1024))
			if err != nil || hdr.Size > 1024 {
				return nil, chunkErr(name, "", "archive manifest checksum unreadable")
			}
			manifestSumText = raw
		default:
			return nil, chunkErr(name, "", "unexpected tar entry %q", ename)
		}
		entryStart = dataOff + hdr.Size + padding(hdr.Size)
	}
	if entryStart+eofSize != s.size {
		return nil, chunkErr(name, last, "%d bytes after the end of the tar at offset %d: the chunk is truncated or has trailing data", s.size-entryStart-eofSize, entryStart+eofSize)
	}
	if s.index == nil {
		return nil, chunkErr(name, last, "no chunk index: the chunk is truncated or not an airlock chunk")
	}
	idx := s.index
	switch {
	case idx.Kind != indexKind || idx.FormatVersion != FormatVersion:
		return nil, chunkErr(name, "", "chunk index has kind %q version %d; this airlock reads %s version %d", idx.Kind, idx.FormatVersion, indexKind, FormatVersion)
	case idx.ArchiveID == "":
		return nil, chunkErr(name, "", "chunk index has no archive id")
	case s.number != 0 && idx.Chunk != s.number:
		return nil, chunkErr(name, "", "chunk index says it is chunk %d: the file was renamed", idx.Chunk)
	case idx.PayloadSize != s.payloadEnd:
		return nil, chunkErr(name, "", "chunk index says the blobs end at %d, they end at %d", idx.PayloadSize, s.payloadEnd)
	case len(idx.Blobs) != len(s.blobs):
		return nil, chunkErr(name, "", "chunk index lists %d blobs, the chunk holds %d", len(idx.Blobs), len(s.blobs))
	}
	for i, b := range idx.Blobs {
		if b != s.blobs[i] {
			return nil, chunkErr(name, s.blobs[i].Digest, "chunk index records %s size %d offset %d, the tar holds size %d offset %d", b.Digest, b.Size, b.Offset, s.blobs[i].Size, s.blobs[i].Offset)
		}
	}
	if s.manifest != nil {
		sum := sha256.Sum256(s.manifest)
		if strings.TrimSpace(string(manifestSumText)) != hex.EncodeToString(sum[:]) {
			s.manifestErr = chunkErr(name, "", "archive manifest does not match its checksum")
		}
	}
	return s, nil
}

func hasDotDot(name string) bool {
	for _, p := range strings.Split(name, "/") {
		if p == ".." {
			return true
		}
	}
	return path.Clean(name) != name && strings.Contains(name, "..")
}

func readSmall(r io.Reader, size int64) ([]byte, error) {
	if size > maxIndexSize {
		return nil, fmt.Errorf("%d bytes is larger than the %d-byte limit", size, maxIndexSize)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON document")
	}
	return nil
}

// Reader reads an archive. It implements endpoint.Source: manifests and blobs are
// read straight from the chunk files (no unpacking) and verified against their
// digests. A Reader is safe for concurrent use.
type Reader struct {
	dir      string
	m        *Manifest
	files    []*os.File // by chunk number - 1
	blobs    map[digest.Digest]BlobRecord
	relied   map[digest.Digest]ReliedRecord
	tags     map[tagKey]TagRecord
	manifest map[digest.Digest]string // manifest digest → media type
}

// Open opens the archive in dir: it reads the manifest from the first chunk (or the
// last when the first is damaged), checks that every chunk is present, belongs to
// this archive and matches the manifest (headers and indexes, not blob contents;
// use Verify for those).
func Open(dir string) (*Reader, error) {
	names, err := listChunks(dir)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s holds no airlock_NNNNNN.tar chunks: %w", dir, ErrNotFound)
	}
	r := &Reader{dir: dir}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	scans := map[string]*chunkScan{}
	scan := func(name string) (*chunkScan, error) {
		if s, ok := scans[name]; ok {
			return s, nil
		}
		f, err := openChunk(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		s, err := scanChunk(f, name)
		if err != nil {
			f.Close()
			return nil, err
		}
		r.files = append(r.files, f)
		scans[name] = s
		return s, nil
	}
	m, err := readManifest(names, scan)
	if err != nil {
		return nil, err
	}
	r.m = m
	// Every chunk the manifest names must be there, and nothing else.
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	var missing []string
	for _, c := range m.Chunks {
		if !present[c.Name] {
			missing = append(missing, c.Name)
		}
		delete(present, c.Name)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("archive %s in %s: chunk %s missing (the archive has %d chunks): copy it from the source side: %w", m.ArchiveID, dir, strings.Join(missing, ", "), len(m.Chunks), ErrCorrupt)
	}
	for n := range present {
		return nil, fmt.Errorf("chunk %s: not part of archive %s (it has %d chunks): remove it or copy the right archive: %w", n, m.ArchiveID, len(m.Chunks), ErrCorrupt)
	}
	files := make([]*os.File, len(m.Chunks))
	var manifests [][]byte
	r.blobs = map[digest.Digest]BlobRecord{}
	byChunk := make([][]BlobRecord, len(m.Chunks))
	for _, b := range m.Blobs {
		if b.Chunk < 1 || b.Chunk > len(m.Chunks) {
			return nil, fmt.Errorf("archive manifest: blob %s is in chunk %d, the archive has %d: %w", b.Digest, b.Chunk, len(m.Chunks), ErrCorrupt)
		}
		if _, dup := r.blobs[b.Digest]; dup {
			return nil, fmt.Errorf("archive manifest: blob %s listed twice: %w", b.Digest, ErrCorrupt)
		}
		r.blobs[b.Digest] = b
		byChunk[b.Chunk-1] = append(byChunk[b.Chunk-1], b)
	}
	for i, c := range m.Chunks {
		s, err := scan(c.Name)
		if err != nil {
			return nil, err
		}
		if s.index.ArchiveID != m.ArchiveID {
			return nil, fmt.Errorf("chunk %s belongs to archive %s, not to archive %s: it comes from another archive; copy the right chunk: %w", c.Name, s.index.ArchiveID, m.ArchiveID, ErrCorrupt)
		}
		if s.indexSHA != c.IndexSHA256 || s.index.PayloadSHA256 != c.PayloadSHA256 || s.payloadEnd != c.PayloadSize {
			return nil, chunkErr(c.Name, "", "chunk index does not match the archive manifest")
		}
		if len(byChunk[i]) != len(s.blobs) {
			return nil, chunkErr(c.Name, "", "the manifest puts %d blobs in this chunk, it holds %d", len(byChunk[i]), len(s.blobs))
		}
		for j, b := range byChunk[i] {
			if sb := s.blobs[j]; sb.Digest != b.Digest || sb.Size != b.Size || sb.Offset != b.Offset {
				return nil, chunkErr(c.Name, sb.Digest, "the archive manifest records %s at offset %d size %d", b.Digest, b.Offset, b.Size)
			}
		}
		if s.manifest != nil {
			manifests = append(manifests, s.manifest)
		}
		for _, f := range r.files {
			if filepath.Base(f.Name()) == c.Name {
				files[i] = f
			}
		}
	}
	if len(manifests) == 0 {
		return nil, fmt.Errorf("archive in %s: no chunk holds the archive manifest: %w", dir, ErrCorrupt)
	}
	for _, mb := range manifests[1:] {
		if !bytes.Equal(mb, manifests[0]) {
			return nil, fmt.Errorf("archive %s: the manifest copies in %s and %s differ: %w", m.ArchiveID, m.Chunks[0].Name, m.Chunks[len(m.Chunks)-1].Name, ErrCorrupt)
		}
	}
	r.files = files
	r.relied = map[digest.Digest]ReliedRecord{}
	for _, b := range m.ReliesOn {
		r.relied[b.Digest] = b
	}
	r.tags = map[tagKey]TagRecord{}
	r.manifest = map[digest.Digest]string{}
	for _, t := range m.Tags {
		if _, ok := r.blobs[t.Digest]; !ok {
			return nil, fmt.Errorf("archive manifest: tag %s:%s names manifest %s, which the archive does not hold: %w", t.Repo, t.Reference, t.Digest, ErrCorrupt)
		}
		r.tags[tagKey{t.Repo, t.Reference}] = t
		r.manifest[t.Digest] = t.MediaType
	}
	ok = true
	return r, nil
}

// readManifest finds the archive manifest in the first chunk, or in the last one
// when the first is damaged, and decodes it.
func readManifest(names []string, scan func(string) (*chunkScan, error)) (*Manifest, error) {
	var firstErr error
	candidates := []string{names[0]}
	if len(names) > 1 {
		candidates = append(candidates, names[len(names)-1])
	}
	for _, n := range candidates {
		s, err := scan(n)
		if err == nil && s.manifest == nil {
			err = chunkErr(n, "", "no archive manifest in this chunk (it should be in the first and the last chunk)")
		}
		if err == nil {
			err = s.manifestErr
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		var m Manifest
		if err := strictUnmarshal(s.manifest, &m); err != nil {
			if firstErr == nil {
				firstErr = chunkErr(n, "", "archive manifest is not valid: %v", err)
			}
			continue
		}
		if err := checkManifest(&m); err != nil {
			if firstErr == nil {
				firstErr = chunkErr(n, "", "archive manifest: %v", err)
			}
			continue
		}
		return &m, nil
	}
	return nil, firstErr
}

func checkManifest(m *Manifest) error {
	if m.Kind != manifestKind || m.FormatVersion != FormatVersion {
		return fmt.Errorf("kind %q version %d; this airlock reads %s version %d", m.Kind, m.FormatVersion, manifestKind, FormatVersion)
	}
	if m.ArchiveID == "" || len(m.Chunks) == 0 || len(m.Chunks) > maxChunkCount {
		return errors.New("no archive id or no chunks")
	}
	for i, c := range m.Chunks {
		if c.Number != i+1 || c.Name != ChunkName(i+1) {
			return fmt.Errorf("chunk %d is named %q", i+1, c.Name)
		}
	}
	for _, b := range m.Blobs {
		if err := validDigest(b.Digest); err != nil {
			return err
		}
		if b.Size < 0 || b.Offset < 0 {
			return fmt.Errorf("blob %s has a negative size or offset", b.Digest)
		}
	}
	for _, t := range m.Tags {
		if err := validDigest(t.Digest); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the chunk files.
func (r *Reader) Close() error {
	for _, f := range r.files {
		if f != nil {
			f.Close()
		}
	}
	return nil
}

// Dir is the archive directory.
func (r *Reader) Dir() string { return r.dir }

// ArchiveManifest returns the archive manifest. Callers must not modify it.
func (r *Reader) ArchiveManifest() *Manifest { return r.m }

// Images returns the images of the plan the archive was written for.
func (r *Reader) Images() []ImageRecord { return r.m.Images }

// Tags returns every manifest reference the archive holds (repository, tag or digest).
func (r *Reader) Tags() []TagRecord { return r.m.Tags }

// ReliesOn returns the blobs the archive's images need but earlier archives shipped.
func (r *Reader) ReliesOn() []ReliedRecord { return r.m.ReliesOn }

// Manifest returns the manifest stored in repo under reference (a tag or a
// digest), verified against its digest.
func (r *Reader) Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	var d digest.Digest
	var mt string
	if t, ok := r.tags[tagKey{repo, reference}]; ok {
		d, mt = t.Digest, t.MediaType
	} else if dd := digest.Digest(reference); dd.Validate() == nil {
		if m, ok := r.manifest[dd]; ok {
			d, mt = dd, m
		}
	}
	if d == "" {
		return endpoint.Manifest{}, fmt.Errorf("manifest %s:%s: %w %s", repo, reference, ErrNotFound, r.dir)
	}
	b := r.blobs[d]
	if b.Size > maxIndexSize {
		return endpoint.Manifest{}, fmt.Errorf("manifest %s: %d bytes is too large: %w", d, b.Size, ErrCorrupt)
	}
	rc, err := r.open(b)
	if err != nil {
		return endpoint.Manifest{}, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(rc)
	if err != nil {
		return endpoint.Manifest{}, err
	}
	return endpoint.Manifest{MediaType: mt, Digest: d, Raw: raw}, nil
}

// Blob opens blob d. The reader streams from the chunk file and returns an error
// instead of io.EOF when the content does not match d. A blob an earlier archive
// shipped is not here: the error wraps ErrReliedOn and names that archive.
func (r *Reader) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	b, ok := r.blobs[d.Digest]
	if !ok {
		if rel, ok := r.relied[d.Digest]; ok {
			return nil, fmt.Errorf("blob %s: %w %s (%s); the destination must already hold it", d.Digest, ErrReliedOn, rel.Origin.ArchiveID, rel.Origin.Archive)
		}
		return nil, fmt.Errorf("blob %s: %w %s", d.Digest, ErrNotFound, r.dir)
	}
	if d.Size > 0 && d.Size != b.Size {
		return nil, fmt.Errorf("blob %s: descriptor says %d bytes, the archive holds %d", d.Digest, d.Size, b.Size)
	}
	return r.open(b)
}

func (r *Reader) open(b BlobRecord) (io.ReadCloser, error) {
	f := r.files[b.Chunk-1]
	v := oci.NewVerifier(io.NewSectionReader(f, b.Offset, b.Size), oci.Descriptor{Digest: b.Digest, Size: b.Size})
	return &chunkBlob{v: v, chunk: ChunkName(b.Chunk), d: b.Digest}, nil
}

// chunkBlob reads one blob of a chunk through the digest-verifying reader, and
// says which chunk to copy again when the content does not match.
type chunkBlob struct {
	v     *oci.Verifier
	chunk string
	d     digest.Digest
}

func (c *chunkBlob) Read(p []byte) (int, error) {
	n, err := c.v.Read(p)
	switch {
	case err == nil || err == io.EOF:
	case errors.Is(err, oci.ErrDigestMismatch):
		err = fmt.Errorf("chunk %s: %v: the chunk is damaged or truncated; copy it again from the source side: %w", c.chunk, err, ErrCorrupt)
	default:
		err = fmt.Errorf("chunk %s: blob %s: %w", c.chunk, c.d, err)
	}
	return n, err
}

func (c *chunkBlob) Close() error { return nil }

// EnsureReliesOn checks that dst already holds every blob this (incremental)
// archive relies on, in every repository that needs it, mounting it from the
// repository the earlier archive put it in when that works. repoFor maps an archive
// repository to the destination's name for it (nil: unchanged). The error wraps
// ErrBaseMissing and names the missing blobs and the earlier archives that had them.
func (r *Reader) EnsureReliesOn(ctx context.Context, dst endpoint.Destination, repoFor func(string) string) error {
	if repoFor == nil {
		repoFor = func(s string) string { return s }
	}
	var missing []string
	byOrigin := map[string]int{}
	for _, b := range r.m.ReliesOn {
		d := endpoint.Descriptor{Digest: b.Digest, Size: b.Size}
		for _, repo := range b.Repos {
			if err := ctx.Err(); err != nil {
				return err
			}
			target := repoFor(repo)
			ok, err := dst.BlobExists(ctx, target, d)
			if err != nil {
				return fmt.Errorf("check blob %s in %s: %w", b.Digest, target, err)
			}
			for _, from := range b.Origin.Repos {
				if ok {
					break
				}
				if ok, err = dst.MountBlob(ctx, target, repoFor(from), d); err != nil {
					return fmt.Errorf("mount blob %s into %s: %w", b.Digest, target, err)
				}
			}
			if !ok {
				missing = append(missing, fmt.Sprintf("%s (needed in %s)", b.Digest, target))
				byOrigin[b.Origin.ArchiveID]++
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return r.notLoadedError(missing, byOrigin)
}

// notLoadedError names the earlier batches whose blobs the destination lacks, in
// the order they must be loaded, and the first missing blobs.
func (r *Reader) notLoadedError(missing []string, byOrigin map[string]int) error {
	this := BatchRef{Batch: r.m.Batch, ArchiveID: r.m.ArchiveID}
	var batches []string
	for _, b := range r.m.BuildsOn {
		if n := byOrigin[b.ArchiveID]; n > 0 {
			batches = append(batches, fmt.Sprintf("%s, written to %s: %d blobs", b, b.Dir, n))
			delete(byOrigin, b.ArchiveID)
		}
	}
	for _, b := range r.m.ReliesOn {
		if n := byOrigin[b.Origin.ArchiveID]; n > 0 {
			batches = append(batches, fmt.Sprintf("%s, written to %s: %d blobs", BatchRef{ArchiveID: b.Origin.ArchiveID}, b.Origin.Archive, n))
			delete(byOrigin, b.Origin.ArchiveID)
		}
	}
	const show = 5
	total, more := len(missing), ""
	if len(missing) > show {
		more = fmt.Sprintf(" and %d more", len(missing)-show)
		missing = missing[:show]
	}
	return fmt.Errorf("%w: %s builds on earlier batches that were not loaded into this registry:\n  %s\nload them first, in this order, then this one (%d blobs missing: %s%s); or build a complete archive with --full", ErrBaseMissing, this, strings.Join(batches, "\n  "), total, strings.Join(missing, ", "), more)
}
