package catalogimage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Decompression of catalog layers. A catalog layer is one large, highly
// compressible tar (a real operator index is 1.7 GB of JSON in a 400 MB gzip
// layer), so inflating it is most of the cost of a first run. The layer's
// compressed bytes are verified against its digest as they are read; gzip is
// inflated (newGzipReader: klauspost's implementation, about a third less CPU
// than compress/gzip, or ISA-L's in a build with -tags isal, 2.5 times
// klauspost's speed) with read-ahead on its own goroutine, so that reading,
// hashing and inflating overlap with what consumes the tar on another core.

const (
	// inflateBlock and inflateBlocks size the gzip read-ahead: up to
	// inflateBlocks blocks of inflated data wait for the consumer.
	inflateBlock  = 1 << 20
	inflateBlocks = 4
	// readAheadBlock and readAheadBlocks size the compressed read-ahead: the
	// blob is read and hashed on a goroutine of its own, off the inflating one
	// (which is the bottleneck of a catalog's first run).
	readAheadBlock  = 1 << 20
	readAheadBlocks = 4
	// zstdMaxWindow bounds the memory one zstd frame may ask for.
	zstdMaxWindow = 64 << 20
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// layerReader is a layer's uncompressed tar stream. Its Read reports the end of
// the tar only after the rest of the compressed blob was read and matched the
// layer's digest and size; a mismatch is the error of that last Read.
type layerReader struct {
	r      io.Reader // the uncompressed stream
	v      *oci.Verifier
	ra     *aheadReader // reads v
	blob   io.Closer
	closeZ func()
	done   bool
}

// openLayer opens l's uncompressed content (gzip, zstd or plain tar, told by
// the first bytes, not by the media type a manifest claims).
func openLayer(l v1.Layer) (io.ReadCloser, error) {
	h, err := l.Digest()
	if err != nil {
		return nil, err
	}
	size, err := l.Size()
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	v := oci.NewVerifier(rc, oci.Descriptor{Digest: digest.Digest(h.String()), Size: size})
	ra := newAheadReader(v, readAheadBlock, readAheadBlocks)
	br := bufio.NewReaderSize(ra, 64<<10)
	lr := &layerReader{v: v, ra: ra, blob: rc, closeZ: func() {}}
	magic, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		zr, err := newGzipReader(br)
		if err != nil {
			rc.Close()
			ra.Close()
			return nil, fmt.Errorf("reading the gzip header: %w", err)
		}
		lr.r, lr.closeZ = zr, func() { zr.Close() }
	case bytes.HasPrefix(magic, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			rc.Close()
			ra.Close()
			return nil, fmt.Errorf("reading the zstd header: %w", err)
		}
		lr.r, lr.closeZ = zr, zr.Close
	default:
		lr.r = br
	}
	return lr, nil
}

func (lr *layerReader) Read(p []byte) (int, error) {
	if lr.done {
		return 0, io.EOF
	}
	n, err := lr.r.Read(p)
	if errors.Is(err, io.EOF) {
		// The compressed stream may hold more than the tar (padding, a
		// trailing empty gzip member): read it all so the digest is checked.
		if _, derr := io.Copy(io.Discard, lr.ra); derr != nil {
			return n, derr
		}
		if !lr.v.Verified() {
			return n, fmt.Errorf("layer ended early: %w", oci.ErrDigestMismatch)
		}
		lr.done = true
	}
	return n, err
}

// Close closes the blob first: what reads it (the read-ahead, the inflater
// behind it) then stops at once instead of waiting for more of the blob.
func (lr *layerReader) Close() error {
	err := lr.blob.Close()
	lr.closeZ()
	lr.ra.Close()
	return err
}
