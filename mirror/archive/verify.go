package archive

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// ChunkReport is what VerifyChunk checked in one chunk.
type ChunkReport struct {
	Name      string `json:"name"`
	ArchiveID string `json:"archiveID"`
	Chunk     int    `json:"chunk"`
	Blobs     int    `json:"blobs"`
	// BlobBytes is the sum of the blob sizes; Size the chunk file size.
	BlobBytes int64 `json:"blobBytes"`
	Size      int64 `json:"size"`
	// HasManifest is true for chunks holding a copy of the archive manifest.
	HasManifest bool `json:"hasManifest"`
}

// VerifyReport is what Verify checked in an archive.
type VerifyReport struct {
	ArchiveID string        `json:"archiveID"`
	Chunks    []ChunkReport `json:"chunks"`
	Blobs     int           `json:"blobs"`
	BlobBytes int64         `json:"blobBytes"`
	Images    int           `json:"images"`
	Tags      int           `json:"tags"`
	ReliesOn  int           `json:"reliesOn"`
}

// VerifyChunk checks one chunk on its own, using only its own index: the tar
// structure (canonical headers of regular files, no links, no paths outside the
// chunk), every blob's digest and size, the zero padding, and the SHA-256 of the
// chunk's blob region. Errors name the chunk and, where there is one, the blob.
func VerifyChunk(ctx context.Context, path string) (*ChunkReport, error) {
	name := filepath.Base(path)
	f, err := openChunk(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := scanChunk(f, name)
	if err != nil {
		return nil, err
	}
	if err := verifyPayload(ctx, f, s); err != nil {
		return nil, err
	}
	if s.manifestErr != nil {
		return nil, s.manifestErr
	}
	rep := &ChunkReport{Name: name, ArchiveID: s.index.ArchiveID, Chunk: s.index.Chunk, Blobs: len(s.blobs), Size: s.size, HasManifest: s.manifest != nil}
	for _, b := range s.blobs {
		rep.BlobBytes += b.Size
	}
	return rep, nil
}

// verifyPayload streams the blob region of a scanned chunk once, checking the
// header and padding bytes, every blob's digest, and the region's SHA-256.
func verifyPayload(ctx context.Context, f *os.File, s *chunkScan) error {
	payload := sha256.New()
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, s.payloadEnd), 1<<20)
	in := io.TeeReader(br, payload)
	var pos int64
	buf := make([]byte, 1<<20)
	for _, b := range s.blobs {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := headerBytes(blobEntryName(b.Digest), b.Size)
		if err != nil {
			return err
		}
		// What lies between the previous blob's data and this one: padding, then header.
		gap := b.Offset - pos
		want := append(make([]byte, gap-int64(len(hdr))), hdr...)
		got := make([]byte, gap)
		if _, err := io.ReadFull(in, got); err != nil {
			return chunkErr(s.name, b.Digest, "reading its header: %v", err)
		}
		if !bytes.Equal(got, want) {
			return chunkErr(s.name, b.Digest, "header or padding bytes before it are damaged")
		}
		vd := digest.SHA256.Digester()
		n, err := io.CopyBuffer(vd.Hash(), io.LimitReader(in, b.Size), buf)
		if err != nil {
			return chunkErr(s.name, b.Digest, "reading it: %v", err)
		}
		if n != b.Size {
			return chunkErr(s.name, b.Digest, "only %d of %d bytes: the chunk is truncated", n, b.Size)
		}
		if got := vd.Digest(); got != b.Digest {
			return chunkErr(s.name, b.Digest, "content has digest %s: the chunk is damaged; copy it again from the source side", got)
		}
		pos = b.Offset + b.Size
	}
	tail := make([]byte, s.payloadEnd-pos)
	if _, err := io.ReadFull(in, tail); err != nil {
		return chunkErr(s.name, "", "reading the padding after the last blob: %v", err)
	}
	if !bytes.Equal(tail, make([]byte, len(tail))) {
		last := digest.Digest("")
		if len(s.blobs) > 0 {
			last = s.blobs[len(s.blobs)-1].Digest
		}
		return chunkErr(s.name, last, "padding after it is damaged")
	}
	if got := hex.EncodeToString(payload.Sum(nil)); got != s.index.PayloadSHA256 {
		return chunkErr(s.name, "", "blob region has SHA-256 %s, its index records %s", got, s.index.PayloadSHA256)
	}
	return nil
}

// Verify checks a whole archive: every chunk on its own (VerifyChunk), then the
// archive as a whole: all chunks present and from this archive, indexes and
// manifest copies agree, every chunk's SHA-256 is the one the manifest records,
// and every image and manifest the archive names is complete (its blobs are in the
// archive or recorded as relied on). It reports every bad chunk, not only the first.
func Verify(ctx context.Context, dir string) (*VerifyReport, error) {
	names, err := listChunks(dir)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s holds no airlock_NNNNNN.tar chunks: %w", dir, ErrNotFound)
	}
	rep := &VerifyReport{}
	var errs []error
	for _, n := range names {
		cr, err := VerifyChunk(ctx, filepath.Join(dir, n))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Chunks = append(rep.Chunks, *cr)
	}
	r, err := Open(dir)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	defer r.Close()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m := r.ArchiveManifest()
	rep.ArchiveID, rep.Blobs, rep.BlobBytes = m.ArchiveID, len(m.Blobs), m.TotalBlobBytes()
	rep.Images, rep.Tags, rep.ReliesOn = len(m.Images), len(m.Tags), len(m.ReliesOn)
	tagged := map[digest.Digest]bool{}
	for _, t := range m.Tags {
		tagged[t.Digest] = true
	}
	subsets := map[digest.Digest]oci.Platforms{} // only the subset's children are in the archive
	for _, im := range m.Images {
		if !tagged[im.Digest] {
			errs = append(errs, fmt.Errorf("image %s (%s): manifest %s is not in the archive: %w", im.Source, im.Destination, im.Digest, ErrCorrupt))
		}
		ps, seen := subsets[im.Digest]
		if !seen {
			ps = im.Platforms
		}
		subsets[im.Digest] = ps.Union(im.Platforms)
	}
	for d := range tagged {
		mf, err := r.Manifest(ctx, "", d.String())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ref := range manifestReferences(mf.Raw, subsets[d]) {
			if _, ok := r.blobs[ref]; ok {
				continue
			}
			if _, ok := r.relied[ref]; ok {
				continue
			}
			errs = append(errs, fmt.Errorf("manifest %s references blob %s, which is neither in the archive nor recorded as shipped earlier: %w", d, ref, ErrCorrupt))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rep, nil
}
