package archive

import (
	"context"
	"crypto/sha256"
	"encoding"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// partialDirName is the folder of the staging area holding the blobs being
// transferred, one file per digest: a transfer that is interrupted (Ctrl-C, a
// broken connection) leaves its bytes there, and the next transfer of the
// blob, in this run or the next, resumes after them (endpoint.ResumableUpload).
const partialDirName = "partial"

func (w *Writer) partialPath(d digest.Digest) string {
	return filepath.Join(w.staging, partialDirName, d.Encoded())
}

// StartBlob implements endpoint.Uploader: nil when blob d is staged or
// shipped, else an upload that resumes the bytes an interrupted transfer of d
// left in the staging area.
func (w *Writer) StartBlob(ctx context.Context, repo string, d endpoint.Descriptor) (endpoint.BlobUpload, error) {
	if err := validBlob(d); err != nil {
		return nil, err
	}
	w.mu.Lock()
	ok, err := w.present(repo, d)
	if !ok && err == nil {
		err = w.reserve(d)
	}
	w.mu.Unlock()
	if ok || err != nil {
		return nil, err
	}
	return &stagingUpload{w: w, repo: repo, d: d}, nil
}

// PutBlob verifies and stages blob d. A blob already staged or shipped is not
// read again; the bytes an interrupted transfer left are dropped (r brings
// the whole blob).
func (w *Writer) PutBlob(ctx context.Context, repo string, d endpoint.Descriptor, r io.Reader) error {
	up, err := w.StartBlob(ctx, repo, d)
	if up == nil || err != nil {
		return err
	}
	return up.Write(ctx, r)
}

func validBlob(d endpoint.Descriptor) error {
	if err := validDigest(d.Digest); err != nil {
		return err
	}
	if d.Size < 0 {
		return fmt.Errorf("blob %s: negative size %d", d.Digest, d.Size)
	}
	return nil
}

// stagingUpload is the endpoint.ResumableUpload of a Writer.
type stagingUpload struct {
	w    *Writer
	repo string
	d    endpoint.Descriptor
	held int64
	h    hash.Hash // the held bytes' state (Held), copied for the caller
}

// Held implements endpoint.ResumableUpload: it reads back the partial file of
// the blob, if any, into a SHA-256 state. A partial file longer than the blob
// is dropped.
func (u *stagingUpload) Held() (int64, hash.Hash, error) {
	u.held, u.h = 0, nil
	if u.d.Digest.Algorithm() != digest.SHA256 {
		return 0, nil, nil
	}
	if s, ok := u.w.slotOf(u.d); ok {
		if n, h, err := u.heldInSlot(s); err != nil || n > 0 {
			return n, h, err
		}
		// Nothing in its slot: a transfer begun before the layout
		// (prestaged.go) may have left bytes in its partial file.
	}
	p := u.w.partialPath(u.d.Digest)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("stage blob %s: %w", u.d.Digest, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, u.d.Size+1))
	if err != nil {
		return 0, nil, fmt.Errorf("stage blob %s: read back its partial file: %w", u.d.Digest, err)
	}
	if n > u.d.Size {
		_ = os.Remove(p)
		return 0, nil, nil
	}
	mine, err := cloneHash(h)
	if err != nil {
		return 0, nil, err
	}
	u.held, u.h = n, mine
	return n, h, nil
}

// cloneHash copies a SHA-256 state.
func cloneHash(h hash.Hash) (hash.Hash, error) {
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, err
	}
	c := sha256.New()
	if err := c.(encoding.BinaryUnmarshaler).UnmarshalBinary(st); err != nil {
		return nil, err
	}
	return c, nil
}

// Write implements endpoint.BlobUpload: the whole blob, from r.
func (u *stagingUpload) Write(ctx context.Context, r io.Reader) error {
	return u.WriteFrom(ctx, r, 0)
}

// WriteFrom implements endpoint.ResumableUpload.
func (u *stagingUpload) WriteFrom(ctx context.Context, r io.Reader, off int64) error {
	var h hash.Hash
	switch {
	case off == 0:
	case off == u.held && u.h != nil:
		h = u.h
	default:
		return fmt.Errorf("stage blob %s from byte %d: %d bytes are held", u.d.Digest, off, u.held)
	}
	u.held, u.h = 0, nil
	w := u.w
	if err := w.stage(ctx, u.d, r, off, h); err != nil {
		return err
	}
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return ErrFinished
	}
	if _, ok := w.blobs[u.d.Digest]; !ok {
		w.blobs[u.d.Digest] = &stagedBlob{size: u.d.Size, repos: map[string]struct{}{}}
	}
	err := w.use(u.repo, u.d.Digest)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	return w.settle(ctx, u.d.Digest)
}

// Cancel implements endpoint.BlobUpload: the partial file stays for the
// next transfer of the blob.
func (u *stagingUpload) Cancel(context.Context) {}

// stage writes blob d into the staging area, verifying size and digest, and
// renames it into place only when both match. r reads the blob from byte off:
// 0, or the length of its partial file, whose bytes h holds. The bytes are
// written to the partial file of d, which a transfer that breaks leaves for
// the next one and one that fails verification (here or in r) removes; when another
// transfer of d writes it, to a temporary file instead.
func (w *Writer) stage(ctx context.Context, d endpoint.Descriptor, r io.Reader, off int64, h hash.Hash) error {
	path, release := w.claimPartial(d.Digest)
	defer release()
	if s, ok := w.slotOf(d); ok && path != "" && (off == 0 || w.slotHolds(d.Digest, off)) {
		return w.writeSlot(ctx, s, d, r, off, h)
	}
	// Else the bytes held are in the partial file (a transfer begun before
	// the layout): it goes on there, and is moved into the slot at the end.
	if path == "" {
		if off > 0 {
			return fmt.Errorf("stage blob %s from byte %d: another transfer writes it", d.Digest, off)
		}
		tmp, err := os.CreateTemp(filepath.Join(w.staging, "tmp"), d.Digest.Encoded()+".*")
		if err != nil {
			return fmt.Errorf("stage blob %s: %w", d.Digest, err)
		}
		tmp.Close()
		path = tmp.Name()
		defer os.Remove(path)
	}
	if h == nil || off == 0 {
		h, off = sha256.New(), 0
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("stage blob %s: %w", d.Digest, err)
	}
	if err = f.Truncate(off); err == nil {
		_, err = f.Seek(off, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("stage blob %s: %w", d.Digest, err)
	}
	// A reader that verifies the whole blob itself (the copy engine's) is not
	// hashed a second time: its verdict at the end stands for h's.
	v, verified := r.(*oci.Verifier)
	verified = verified && v.Covers(d, off)
	var sink io.Writer = io.MultiWriter(f, h)
	if verified {
		// Not f itself: io.CopyBuffer would hand the copy to f.ReadFrom,
		// which writes 32 KiB at a time from a network reader.
		sink = struct{ io.Writer }{f}
	}
	// Read one byte more than announced to detect oversized streams.
	n, err := io.CopyBuffer(sink, &ctxReader{ctx, io.LimitReader(r, d.Size-off+1)}, make([]byte, stageBufSize(d.Size-off+1)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, oci.ErrDigestMismatch) {
			// The reader found the whole blob wrong (the held bytes may be
			// what is wrong): the next attempt starts over.
			_ = os.Remove(path)
		}
		return fmt.Errorf("stage blob %s: %w", d.Digest, err)
	}
	if off+n != d.Size {
		_ = os.Remove(path)
		return fmt.Errorf("blob %s: read %d bytes, descriptor says %d: %w", d.Digest, off+n, d.Size, ErrCorrupt)
	}
	if verified {
		if !v.Verified() {
			_ = os.Remove(path)
			return fmt.Errorf("blob %s: its content was not verified to the end: %w", d.Digest, ErrCorrupt)
		}
	} else if got := digest.NewDigest(digest.SHA256, h); got != d.Digest {
		_ = os.Remove(path)
		return fmt.Errorf("blob %s: content has digest %s: %w", d.Digest, got, ErrCorrupt)
	}
	if w.inSlot(d.Digest) {
		return nil // a concurrent transfer wrote it into its slot meanwhile
	}
	if s, ok := w.slotOf(d); ok && path == w.partialPath(d.Digest) {
		// Expect gave it a slot while it was fetched (prestaged.go).
		return w.stagedIntoSlot(ctx, s, d, path)
	}
	if err := os.Rename(path, w.stagedPath(d.Digest)); err != nil {
		return fmt.Errorf("stage blob %s: %w", d.Digest, err)
	}
	return nil
}

// claimPartial returns the partial file of d for the caller to write, or ""
// when another transfer writes it; release gives it back.
func (w *Writer) claimPartial(d digest.Digest) (path string, release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writing[d] || d.Algorithm() != digest.SHA256 {
		return "", func() {}
	}
	w.writing[d] = true
	return w.partialPath(d), func() {
		w.mu.Lock()
		delete(w.writing, d)
		w.mu.Unlock()
	}
}

// heldInSlot is Held for a blob with a slot: the bytes an interrupted
// transfer wrote there, as the journal recorded them.
func (u *stagingUpload) heldInSlot(s slot) (int64, hash.Hash, error) {
	u.w.mu.Lock()
	n := u.w.slotHeld[u.d.Digest]
	u.w.mu.Unlock()
	if n <= 0 || n > u.d.Size {
		return 0, nil, nil
	}
	h, err := u.w.slotHeldHash(s, u.d.Digest, n)
	if err != nil {
		return 0, nil, nil // fetched whole
	}
	mine, err := cloneHash(h)
	if err != nil {
		return 0, nil, err
	}
	u.held, u.h = n, mine
	return n, h, nil
}

// stageMaxBuf is the largest buffer a staging write goes through.
const stageMaxBuf = 1 << 20

// stageBufSize is the buffer for staging n bytes: n, up to stageMaxBuf. Most
// blobs of a large mirror are configs and small layers of a few KiB: a 1 MiB
// buffer for each was an allocation (zeroed, then collected) hundreds of
// times their size, a quarter of mirror-to-disk's CPU at 5,000 images.
func stageBufSize(n int64) int64 {
	return max(1, min(n, stageMaxBuf))
}
