package archive

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing bytes [off, off+n) of f to
// the disk now, without waiting for it (sync_file_range with
// SYNC_FILE_RANGE_WRITE). It is a hint: an error is ignored, and durability
// still comes from the fsync that seals the chunk.
func startWriteback(f *os.File, off, n int64) {
	if n > 0 {
		_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}
}
