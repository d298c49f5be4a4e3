package workload

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"

	"github.com/opencontainers/go-digest"
)

// verifying is a blob body that hashes what it reads and ends in an error
// instead of io.EOF when the content is not d (size and SHA-256): the verifying
// copy floor's minimal verification, one pass of the hash over every byte.
type verifying struct {
	rc   io.ReadCloser
	h    hash.Hash
	d    digest.Digest
	size int64
	n    int64
}

func newVerifying(rc io.ReadCloser, d digest.Digest, size int64) *verifying {
	return &verifying{rc: rc, h: sha256.New(), d: d, size: size}
}

func (v *verifying) Read(p []byte) (int, error) {
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.size {
		return n, fmt.Errorf("blob %s: more than %d bytes", v.d, v.size)
	}
	if err == io.EOF {
		if got := digest.NewDigest(digest.SHA256, v.h); v.n != v.size || got != v.d {
			return n, fmt.Errorf("blob %s: got %s, %d bytes", v.d, got, v.n)
		}
	}
	return n, err
}

func (v *verifying) Close() error { return v.rc.Close() }
