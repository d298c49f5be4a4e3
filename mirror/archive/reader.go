package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

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
	// manifestDigest is the digest of the archive manifest's bytes (what an
	// archive signature signs).
	manifestDigest digest.Digest
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
		if staging, _ := filepath.Glob(filepath.Join(dir, stagingDirName+"*")); len(staging) > 0 {
			return nil, fmt.Errorf("%s is an unfinished batch: the mirror-to-disk run writing it stopped before the archive was written (interrupted, or refused to finish: its summary says why); run that mirror-to-disk again on the connected side to finish the batch, then carry it: %w", dir, ErrUnfinished)
		}
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
	m, raw, err := readManifest(names, scan)
	if err != nil {
		return nil, err
	}
	r.m, r.manifestDigest = m, digest.FromBytes(raw)
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
func readManifest(names []string, scan func(string) (*chunkScan, error)) (*Manifest, []byte, error) {
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
		err = checkManifest(&m)
		if err == nil {
			err = checkIdentity(&m)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = chunkErr(n, "", "archive manifest: %v", err)
			}
			continue
		}
		return &m, s.manifest, nil
	}
	return nil, nil, firstErr
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
	if err := ctx.Err(); err != nil {
		return endpoint.Manifest{}, err
	}
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
	rc, err := r.open(ctx, b)
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
// instead of io.EOF when the content does not match d, or ctx's error once it
// is done. A blob an earlier archive shipped is not here: the error wraps
// ErrReliedOn and names that archive.
func (r *Reader) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
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
	return r.open(ctx, b)
}

func (r *Reader) open(ctx context.Context, b BlobRecord) (io.ReadCloser, error) {
	f := r.files[b.Chunk-1]
	v := oci.NewVerifier(io.NewSectionReader(f, b.Offset, b.Size), oci.Descriptor{Digest: b.Digest, Size: b.Size})
	return &chunkBlob{ctx: ctx, v: v, chunk: ChunkName(b.Chunk), d: b.Digest}, nil
}

// chunkBlob reads one blob of a chunk through the digest-verifying reader, and
// says which chunk to copy again when the content does not match.
type chunkBlob struct {
	ctx   context.Context
	v     *oci.Verifier
	chunk string
	d     digest.Digest
}

func (c *chunkBlob) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
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
