package endpoint

import (
	"context"
	"hash"
	"io"
	"strings"
)

// RangeSource is a Source that can read a blob from a byte offset (a registry:
// an HTTP Range request). The copy engine uses it to resume a blob whose
// first bytes a ResumableUpload already holds, so that no byte is fetched
// twice after an interruption.
type RangeSource interface {
	// BlobFrom opens blob d of repo at byte off (0 ≤ off ≤ d.Size). It
	// returns the offset the reader really starts at: off, or 0 when the
	// source cannot read from an offset (the caller then starts over).
	BlobFrom(ctx context.Context, repo string, d Descriptor, off int64) (io.ReadCloser, int64, error)
}

// BlobFrom opens blob d of repo at byte off when src is a RangeSource, else
// from its start; it returns the offset the reader starts at. Nothing is read
// when off is the blob's size.
func BlobFrom(ctx context.Context, src Source, repo string, d Descriptor, off int64) (io.ReadCloser, int64, error) {
	if off > 0 && off == d.Size { // held whole: nothing is left to read
		return io.NopCloser(strings.NewReader("")), off, nil
	}
	if rs, ok := src.(RangeSource); ok && off > 0 {
		return rs.BlobFrom(ctx, repo, d, off)
	}
	rc, err := src.Blob(ctx, repo, d)
	return rc, 0, err
}

// ResumableUpload is a BlobUpload that may already hold the first bytes of its
// blob, kept from a transfer that was interrupted (in this run or an earlier
// one: an archive's staging area keeps them on disk).
type ResumableUpload interface {
	BlobUpload
	// Held returns how many leading bytes of the blob the upload holds and a
	// SHA-256 state those bytes were written into (rebuilt by reading them
	// back), from which the caller continues verifying the blob. 0 and nil
	// when it holds none (or the blob's digest is not SHA-256).
	Held() (int64, hash.Hash, error)
	// WriteFrom is Write for a reader of the blob from byte off, either 0
	// (the held bytes are dropped) or what Held returned (r brings the rest).
	// The whole blob's digest and size are verified before it is committed.
	WriteFrom(ctx context.Context, r io.Reader, off int64) error
}
