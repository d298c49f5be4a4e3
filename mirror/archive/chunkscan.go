package archive

import (
	"archive/tar"
	"bytes"
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
