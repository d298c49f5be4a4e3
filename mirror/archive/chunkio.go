package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
)

// copyHashing copies r to out through buf, as io.CopyBuffer does, while h
// hashes the same bytes on another goroutine: a staged blob's digest (its
// re-verification) and the chunk's payload hash (in out) are computed side by
// side on two cores instead of one after the other.
func copyHashing(out io.Writer, h hash.Hash, r io.Reader, buf []byte) (int64, error) {
	work, done := make(chan []byte), make(chan struct{})
	go func() {
		for p := range work {
			h.Write(p)
			done <- struct{}{}
		}
	}()
	defer close(work)
	var total int64
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			work <- buf[:n]
			_, werr := out.Write(buf[:n])
			<-done
			total += int64(n)
			if werr != nil {
				return total, werr
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
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
	return writeTail(path, bodySize, nil, manifest, withManifest, false)
}

// writeTail truncates chunk path at offset at (creating it when create is set)
// and appends pre (an index entry, or nothing), the manifest entry and its
// checksum when withManifest is set, and the tar end marker, then syncs.
func writeTail(path string, at int64, pre, manifest []byte, withManifest, create bool) error {
	flags := os.O_WRONLY
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("open chunk %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	if err := f.Truncate(at); err != nil {
		return fmt.Errorf("chunk %s: %w", filepath.Base(path), err)
	}
	tail := append([]byte(nil), pre...)
	if withManifest {
		me, err := entryBytes(manifestName, manifest)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(manifest)
		se, err := entryBytes(manifestSum, []byte(hex.EncodeToString(sum[:])+"\n"))
		if err != nil {
			return err
		}
		tail = append(append(tail, me...), se...)
	}
	tail = append(tail, make([]byte, eofSize)...)
	if _, err := f.WriteAt(tail, at); err != nil {
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
