package registry

import (
	"fmt"
	"io"
	"math/bits"
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

// Pooled buffers come in size classes, powers of two from pooledMin up to
// 1<<maxClassBits: a blob takes a buffer of its class, not one of the
// largest size sent whole. With every buffer at Options.MonolithicMax (4 MiB),
// 80 transfers of 1 MB layers held 320 MiB, and more transfers in flight
// over a link of long round trips put a mirror over its memory target.
const (
	minClassBits = 16 // pooledMin
	maxClassBits = 30
)

var blobBufs [maxClassBits + 1]sync.Pool // *[]byte, by class

// classBits is the size class of a buffer of n bytes (n ≥ pooledMin): the
// bits of the least power of two at least n, or 0 when n is beyond the
// largest class.
func classBits(n int) int {
	b := max(bits.Len(uint(n-1)), minClassBits)
	if b > maxClassBits {
		return 0
	}
	return b
}

// getBuf returns a buffer of length n, pooled when n ≥ pooledMin: its
// capacity is n's size class.
func getBuf(n int) []byte {
	if n < pooledMin {
		return make([]byte, n)
	}
	c := classBits(n)
	if c == 0 {
		return make([]byte, n)
	}
	if p, ok := blobBufs[c].Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<c)
}

// putBuf gives back a buffer from getBuf. Only a buffer no request still reads
// may be given back: one whose upload the registry answered (it had read the
// whole body).
func putBuf(b []byte) {
	if cap(b) < pooledMin {
		return
	}
	if c := classBits(cap(b)); c != 0 && cap(b) == 1<<c {
		blobBufs[c].Put(&b)
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
