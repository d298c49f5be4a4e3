package catalogimage

import (
	"io"

	"github.com/klauspost/pgzip"
)

// gzipReaders are the gzip implementations of this build, by name (the tests
// check each); newGzipReader is the one catalog layers are read with
// (inflate_go.go, or inflate_isal.go in a build with -tags isal and cgo).
var gzipReaders = map[string]func(io.Reader) (io.ReadCloser, error){"klauspost/pgzip": newPgzipReader}

// newPgzipReader inflates the gzip stream r (every member) with klauspost's
// implementation on a goroutine of its own, up to inflateBlocks blocks ahead
// of the reader.
func newPgzipReader(r io.Reader) (io.ReadCloser, error) {
	return pgzip.NewReaderN(r, inflateBlock, inflateBlocks)
}
