package oci

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"

	"github.com/opencontainers/go-digest"
)

// Verifier passes bytes through, hashing them. At EOF it fails with
// ErrDigestMismatch unless size and digest match, so a streaming upload that reads
// from it aborts before it is committed; it fails as soon as more than the
// declared size arrives (a negative size is not checked).
type Verifier struct {
	r    io.Reader
	d    Descriptor
	h    hash.Hash
	dv   digest.Verifier
	n    int64
	err  error
	done bool
}

// NewVerifier returns a Verifier of r against d.
func NewVerifier(r io.Reader, d Descriptor) *Verifier {
	v := &Verifier{r: r, d: d}
	if d.Digest.Algorithm() == digest.SHA256 {
		v.h = sha256.New()
	} else {
		v.dv = d.Digest.Verifier()
	}
	return v
}

// NewVerifierFrom returns a Verifier of the rest of a blob: r reads d from
// byte n on, and h is a SHA-256 state the first n bytes were written into
// (a resumed transfer); N counts those n bytes too. With no state (h nil, or
// d not SHA-256) it is NewVerifier and n must be 0.
func NewVerifierFrom(r io.Reader, d Descriptor, n int64, h hash.Hash) *Verifier {
	if h == nil || n == 0 || d.Digest.Algorithm() != digest.SHA256 {
		return NewVerifier(r, d)
	}
	return &Verifier{r: r, d: d, h: h, n: n}
}

// AsVerifier returns r itself when it already verifies d, else wraps it.
func AsVerifier(r io.Reader, d Descriptor) *Verifier {
	if v, ok := r.(*Verifier); ok && v.d.Digest == d.Digest && v.d.Size == d.Size {
		return v
	}
	return NewVerifier(r, d)
}

func (v *Verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.done {
		return 0, io.EOF
	}
	n, err := v.r.Read(p)
	if n > 0 {
		v.n += int64(n)
		if v.d.Size >= 0 && v.n > v.d.Size {
			v.err = fmt.Errorf("blob %s: more than its declared %d bytes: %w", v.d.Digest, v.d.Size, ErrDigestMismatch)
			return 0, v.err
		}
		if v.h != nil {
			v.h.Write(p[:n])
		} else {
			v.dv.Write(p[:n])
		}
	}
	switch {
	case err == io.EOF:
		if v.d.Size >= 0 && v.n != v.d.Size {
			v.err = fmt.Errorf("blob %s: got %d bytes, want %d: %w", v.d.Digest, v.n, v.d.Size, ErrDigestMismatch)
			return n, v.err
		}
		ok := false
		if v.h != nil {
			ok = digest.NewDigest(digest.SHA256, v.h) == v.d.Digest
		} else {
			ok = v.dv.Verified()
		}
		if !ok {
			v.err = fmt.Errorf("blob %s: content does not match the digest: %w", v.d.Digest, ErrDigestMismatch)
			return n, v.err
		}
		v.done = true
		return n, io.EOF
	case err != nil:
		v.err = err
		return n, err
	}
	return n, nil
}

// Covers reports whether v verifies the whole of blob d and has passed
// exactly its first off bytes so far: a reader of the rest of d from byte off
// that reads v to its end needs no hash of its own (Verified then says
// whether the whole blob matched).
func (v *Verifier) Covers(d Descriptor, off int64) bool {
	return v.d.Digest == d.Digest && v.d.Size == d.Size && v.n == off && !v.done && v.err == nil
}

// Verified reports whether the whole content was read and matched.
func (v *Verifier) Verified() bool { return v.done && v.err == nil }

// Err returns the first error the Verifier met (a mismatch or a read error).
func (v *Verifier) Err() error { return v.err }

// N returns how many bytes passed so far.
func (v *Verifier) N() int64 { return v.n }
