//go:build !isal || !cgo

package catalogimage

import "io"

// inflater names the gzip implementation of this build (see inflate_isal.go).
const inflater = "klauspost/pgzip"

// newGzipReader inflates the gzip stream r: newPgzipReader.
func newGzipReader(r io.Reader) (io.ReadCloser, error) { return newPgzipReader(r) }
