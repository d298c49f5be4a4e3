package catalogimage

import (
	"errors"
	"fmt"

	"github.com/airlock-mirror/airlock/internal/humanize"
)

// ErrExtractLimit is returned (wrapped) when a catalog image holds more than
// ExtractLimits allows: it is refused before the entry that would exceed the
// limit is written.
var ErrExtractLimit = errors.New("catalog image exceeds an extraction limit")

// Default extraction limits. The largest real catalog we know of (every bundle
// of community-operators-prod, ../shared/fixtures/large) is 1.7 GB in 333 files,
// the largest 162 MB, at most 2 levels below the catalog folder.
const (
	DefaultMaxExtractBytes   int64 = 8 << 30   // 8 GiB: 4.7× the largest real catalog
	DefaultMaxExtractFile    int64 = 512 << 20 // 512 MiB: 3.3× the largest real file
	DefaultMaxExtractDepth         = 64        // path components below the catalog folder
	DefaultMaxExtractEntries       = 1_000_000 // files, links and folders written
)

// ExtractLimits bound what extracting a catalog image may write, so that an
// image crafted to expand (a small compressed layer holding a huge file, or
// millions of entries, or thousands of nested folders) is refused with a clear
// error instead of filling the disk. Zero fields take the defaults above.
type ExtractLimits struct {
	// MaxBytes bounds the total size of the regular files written.
	MaxBytes int64
	// MaxFileBytes bounds one regular file.
	MaxFileBytes int64
	// MaxDepth bounds the number of path components of an entry below the
	// catalog folder (configs/pkg/catalog.json has 2).
	MaxDepth int
	// MaxEntries bounds the number of files, links and folders written.
	MaxEntries int
}

func (l ExtractLimits) withDefaults() ExtractLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxExtractBytes
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxExtractFile
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxExtractDepth
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxExtractEntries
	}
	return l
}

// admit counts one more entry written (and size bytes of file content) against
// the limits, refusing it before anything is written when a limit would be
// exceeded.
func (x *extractor) admit(name string, size int64) error {
	l := x.limits
	if size > l.MaxFileBytes {
		return fmt.Errorf("%w: file %s holds %s, more than the %s allowed for one file of a catalog (ExtractLimits.MaxFileBytes); the largest real catalog file we know of is 162 MB, so check where this image comes from",
			ErrExtractLimit, name, humanize.Bytes(size), humanize.Bytes(l.MaxFileBytes))
	}
	if size > l.MaxBytes-x.written {
		return fmt.Errorf("%w: file %s (%s) would bring the catalog to %s, more than the %s allowed (ExtractLimits.MaxBytes); the largest real catalog we know of is 1.7 GB, so check where this image comes from",
			ErrExtractLimit, name, humanize.Bytes(size), humanize.Bytes(x.written+size), humanize.Bytes(l.MaxBytes))
	}
	if x.entries >= l.MaxEntries {
		return fmt.Errorf("%w: entry %s would be entry %d of the catalog, more than the %d allowed (ExtractLimits.MaxEntries); check where this image comes from",
			ErrExtractLimit, name, x.entries+1, l.MaxEntries)
	}
	x.written += size
	x.entries++
	return nil
}
