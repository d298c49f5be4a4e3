package registry

import (
	"fmt"
	"io"
	"sync"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Blobs sent with one PUT (up to Options.MonolithicMax) are read whole into
// memory first. Their buffers are reused: a run sends hundreds of such blobs of
// a few MB each, and a fresh buffer for each cost the client more CPU
// (allocating, zeroing, page faults, garbage collection) than the copy itself.

// pooledMin is the smallest blob read into a pooled buffer; smaller ones
// (configs, tiny layers) take an allocation of their own size.
const pooledMin = 64 << 10

var blobBufs sync.Pool // *[]byte

// getBuf returns a buffer of length n, pooled when n ≥ pooledMin; its capacity
// is at least class (the client's MonolithicMax + 1), so that any pooled buffer
// fits any blob sent whole.
func getBuf(n, class int) []byte {
	if n < pooledMin {
		return make([]byte, n)
	}
	if p, ok := blobBufs.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n, max(n, class))
}

// putBuf gives back a buffer from getBuf. Only a buffer no request still reads
// may be given back: one whose upload the registry answered (it had read the
// whole body).
func putBuf(b []byte) {
	if cap(b) >= pooledMin {
		blobBufs.Put(&b)
	}
}

// readBlob reads the whole of blob v (d.Size bytes, then its end, where v checks
// size and digest) into buf, which has length d.Size + 1.
func readBlob(v *oci.Verifier, buf []byte) ([]byte, error) {
	size := len(buf) - 1
	if _, err := io.ReadFull(v, buf[:size]); err != nil {
		if v.Err() != nil {
			return nil, v.Err()
		}
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return nil, fmt.Errorf("blob ended after %d of %d bytes: %w", v.N(), size, oci.ErrDigestMismatch)
		}
		return nil, err
	}
	// The end: v reports a digest mismatch or extra bytes here.
	if _, err := io.ReadFull(v, buf[size:]); err != io.EOF {
		if v.Err() != nil {
			return nil, v.Err()
		}
		if err == nil {
			err = fmt.Errorf("blob longer than its declared %d bytes: %w", size, oci.ErrDigestMismatch)
		}
		return nil, err
	}
	if !v.Verified() {
		return nil, fmt.Errorf("blob not verified after %d of %d bytes: %w", v.N(), size, oci.ErrDigestMismatch)
	}
	return buf[:size], nil
}
