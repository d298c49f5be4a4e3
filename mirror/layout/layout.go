// Package layout is the OCI image layout endpoint: Source reads images from a
// layout directory (index.json, oci-layout, blobs/), Destination writes them
// (atomically, verified) and lets a reader follow a blob while it is being
// written (Follower); BuildBinaryImage writes a minimal image holding one static
// program; NewLayerGzip is the one deterministic gzip writer of the layers
// airlock builds.
//
// It knows nothing about registries, plans, catalogs or the copy engine that
// drives it (it only implements the endpoint interfaces).
package layout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// ErrNotFound is returned (wrapped) by the layout endpoint for a manifest or blob
// it does not hold.
var ErrNotFound = errors.New("not found in the OCI layout")

// IsDir reports whether p holds an OCI image layout (an index.json file).
func IsDir(p string) bool {
	st, err := os.Stat(filepath.Join(p, "index.json"))
	return err == nil && st.Mode().IsRegular()
}

// Source reads images from an OCI image layout directory (index.json,
// oci-layout, blobs/<alg>/<hex>), such as the one catalogimage.Rebuild writes. The repo
// argument of its methods is ignored: a layout has no repositories. A manifest is
// named by digest, or by tag: the org.opencontainers.image.ref.name annotation of
// an index.json entry, either "TAG" or "NAME:TAG".
type Source struct {
	dir string
}

var _ endpoint.Source = (*Source)(nil)

// NewSource opens the OCI image layout at dir.
func NewSource(dir string) (*Source, error) {
	if !IsDir(dir) {
		return nil, fmt.Errorf("%s is not an OCI image layout (no index.json)", dir)
	}
	return &Source{dir: dir}, nil
}

// Dir is the layout directory.
func (s *Source) Dir() string { return s.dir }

// Manifest returns the manifest named by reference (a tag or a digest).
func (s *Source) Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	if err := ctx.Err(); err != nil {
		return endpoint.Manifest{}, err
	}
	idx, err := readLayoutIndex(s.dir)
	if err != nil {
		return endpoint.Manifest{}, err
	}
	var want endpoint.Descriptor
	if d, err := digest.Parse(reference); err == nil {
		want.Digest = d
		if e, ok := idx.byDigest(d); ok {
			want = e
		}
	} else {
		e, ok := idx.byTag(reference)
		if !ok {
			return endpoint.Manifest{}, fmt.Errorf("manifest %q: %w %s", reference, ErrNotFound, s.dir)
		}
		want = e
	}
	raw, err := readLayoutBlob(s.dir, want.Digest, MaxManifestSize)
	if err != nil {
		return endpoint.Manifest{}, fmt.Errorf("manifest %s: %w", want.Digest, err)
	}
	if want.Size > 0 && int64(len(raw)) != want.Size {
		return endpoint.Manifest{}, fmt.Errorf("manifest %s in %s: size %d, index.json says %d", want.Digest, s.dir, len(raw), want.Size)
	}
	if got := want.Digest.Algorithm().FromBytes(raw); got != want.Digest {
		return endpoint.Manifest{}, fmt.Errorf("manifest %s in %s is corrupt: its content has digest %s", want.Digest, s.dir, got)
	}
	mt := want.MediaType
	if mt == "" {
		mt = oci.MediaTypeOf("", raw)
	}
	return endpoint.Manifest{MediaType: mt, Digest: want.Digest, Raw: raw}, nil
}

// Blob opens blob d. Its size is checked; the content is verified by the caller.
func (s *Source) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := layoutBlobPath(s.dir, d.Digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s: %w %s", d.Digest, ErrNotFound, s.dir)
	}
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || (d.Size > 0 && st.Size() != d.Size) {
		f.Close()
		if err == nil {
			err = fmt.Errorf("blob %s in %s has %d bytes, expected %d", d.Digest, s.dir, st.Size(), d.Size)
		}
		return nil, err
	}
	return f, nil
}

// MaxManifestSize bounds what is read as a manifest (registries use 4 MiB).
const MaxManifestSize = 4 << 20

func layoutBlobPath(dir string, d digest.Digest) (string, error) {
	if err := d.Validate(); err != nil {
		return "", fmt.Errorf("invalid digest %q: %w", d, err)
	}
	return filepath.Join(dir, "blobs", d.Algorithm().String(), d.Encoded()), nil
}

func readLayoutBlob(dir string, d digest.Digest, limit int64) ([]byte, error) {
	p, err := layoutBlobPath(dir, d)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w %s", ErrNotFound, dir)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// layoutIndex is index.json of an OCI layout.
type layoutIndex struct {
	SchemaVersion int                `json:"schemaVersion"`
	MediaType     string             `json:"mediaType,omitempty"`
	Manifests     []layoutDescriptor `json:"manifests"`
}

type layoutDescriptor struct {
	MediaType   string            `json:"mediaType,omitempty"`
	Digest      digest.Digest     `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func (d layoutDescriptor) endpoint() endpoint.Descriptor {
	return endpoint.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}
}

func readLayoutIndex(dir string) (*layoutIndex, error) {
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout index: %w", err)
	}
	var idx layoutIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "index.json"), err)
	}
	return &idx, nil
}

func (idx *layoutIndex) byDigest(d digest.Digest) (endpoint.Descriptor, bool) {
	for _, m := range idx.Manifests {
		if m.Digest == d {
			return m.endpoint(), true
		}
	}
	return endpoint.Descriptor{}, false
}

// RefNameMatches reports whether a ref.name annotation ("TAG" or "NAME:TAG")
// names tag.
func RefNameMatches(name, tag string) bool {
	return name == tag || (tag != "" && !strings.Contains(tag, "/") && strings.HasSuffix(name, ":"+tag))
}

func (idx *layoutIndex) byTag(tag string) (endpoint.Descriptor, bool) {
	for _, m := range idx.Manifests {
		if n, ok := m.Annotations[oci.AnnotationRefName]; ok && RefNameMatches(n, tag) {
			return m.endpoint(), true
		}
	}
	return endpoint.Descriptor{}, false
}

// Destination writes images into an OCI image layout directory. The repo
// argument is ignored. A manifest pushed under a tag is listed in index.json
// with the tag as its org.opencontainers.image.ref.name (replacing an earlier
// manifest with that tag); one pushed by digest (a child of an index) is only
// stored as a blob.
type Destination struct {
	dir      string
	mu       sync.Mutex // guards index.json
	followed followers  // readers of blobs being written (Follow)
}

var _ endpoint.Destination = (*Destination)(nil)

// NewDestination opens the OCI image layout at dir, creating it if needed.
func NewDestination(dir string) (*Destination, error) {
	if !IsDir(dir) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"schemaVersion":2,"mediaType":"`+oci.MediaTypeOCIIndex+`","manifests":[]}`), 0); err != nil {
			return nil, err
		}
	}
	return &Destination{dir: dir}, nil
}

// Source returns a Source reading the same layout.
func (l *Destination) Source() *Source { return &Source{dir: l.dir} }

// BlobExists reports whether the layout holds blob d (with the right size).
func (l *Destination) BlobExists(ctx context.Context, repo string, d endpoint.Descriptor) (bool, error) {
	p, err := layoutBlobPath(l.dir, d.Digest)
	if err != nil {
		return false, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return d.Size <= 0 || st.Size() == d.Size, nil
}

// MountBlob always returns false: a layout has one blob store, so a blob present
// for one repository is present for all (BlobExists says so).
func (l *Destination) MountBlob(ctx context.Context, repo, from string, d endpoint.Descriptor) (bool, error) {
	return false, nil
}

// PutBlob stores r as blob d, verifying digest and size before committing.
func (l *Destination) PutBlob(ctx context.Context, repo string, d endpoint.Descriptor, r io.Reader) error {
	p, err := layoutBlobPath(l.dir, d.Digest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := atomicfile.Create(p, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var w io.Writer = f
	fw := l.follower(d.Digest)
	if fw != nil {
		fw.attempt(f.Name())
		w = followWriter{f, fw}
	}
	v := oci.AsVerifier(layoutCtxReader{ctx, r}, d)
	if _, err := io.Copy(w, v); err != nil {
		return fmt.Errorf("writing blob %s: %w", d.Digest, err)
	}
	if !v.Verified() {
		return fmt.Errorf("blob %s: content does not match its digest: %w", d.Digest, oci.ErrDigestMismatch)
	}
	if err := f.Commit(); err != nil {
		return err
	}
	if fw != nil {
		l.committed(d.Digest)
	}
	return nil
}

// ManifestExists reports whether the layout holds manifest d, and, when reference
// is a tag, lists it in index.json under that tag.
func (l *Destination) ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error) {
	ok, err := l.BlobExists(ctx, repo, endpoint.Descriptor{Digest: d, Size: -1})
	if err != nil || !ok {
		return false, err
	}
	if _, err := digest.Parse(reference); err == nil {
		return true, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	idx, err := readLayoutIndex(l.dir)
	if err != nil {
		return false, err
	}
	e, ok := idx.byTag(reference)
	return ok && e.Digest == d, nil
}

// PutManifest stores m and, when reference is a tag, lists it in index.json.
func (l *Destination) PutManifest(ctx context.Context, repo, reference string, m endpoint.Manifest) error {
	if got := m.Digest.Algorithm().FromBytes(m.Raw); got != m.Digest {
		return fmt.Errorf("manifest %s: content has digest %s", m.Digest, got)
	}
	ref, refErr := digest.Parse(reference)
	if refErr == nil && ref != m.Digest {
		return fmt.Errorf("manifest %s pushed by the digest %s: %w", m.Digest, ref, oci.ErrDigestMismatch)
	}
	if err := l.PutBlob(ctx, repo, endpoint.Descriptor{Digest: m.Digest, Size: int64(len(m.Raw))}, bytes.NewReader(m.Raw)); err != nil {
		return err
	}
	if refErr == nil {
		return nil
	}
	if !oci.ValidTag(reference) {
		return fmt.Errorf("invalid tag %q", reference)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	idx, err := readLayoutIndex(l.dir)
	if err != nil {
		return err
	}
	kept := idx.Manifests[:0]
	for _, e := range idx.Manifests {
		if e.Annotations[oci.AnnotationRefName] != reference {
			kept = append(kept, e)
		}
	}
	idx.Manifests = append(kept, layoutDescriptor{
		MediaType:   m.MediaType,
		Digest:      m.Digest,
		Size:        int64(len(m.Raw)),
		Annotations: map[string]string{oci.AnnotationRefName: reference},
	})
	if idx.SchemaVersion == 0 {
		idx.SchemaVersion = 2
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(l.dir, "index.json"), b, 0)
}

// layoutCtxReader stops a copy when its context is done.
type layoutCtxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c layoutCtxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
