package layout

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

func TestLayoutSourceAndDestination(t *testing.T) {
	ctx := context.Background()
	srcDir := filepath.Join(t.TempDir(), "src")
	idx, err := fakeimage.Index(fakeimage.Spec{Seed: 1, Layers: 2, OCI: true, Platforms: []string{"linux/amd64", "linux/arm64"}})
	if err != nil {
		t.Fatal(err)
	}
	mirrortest.WriteLayout(t, srcDir, func(p layout.Path) {
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{oci.AnnotationRefName: "quay.io/ns/cat:v1"})); err != nil {
			t.Fatal(err)
		}
	})
	src, err := NewSource(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Manifest(ctx, "ignored", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if m.Digest.String() != mirrortest.DigestOf(t, idx) || m.MediaType != string(types.OCIImageIndex) {
		t.Fatalf("Manifest(v1) = %s %s, want %s", m.Digest, m.MediaType, mirrortest.DigestOf(t, idx))
	}
	if _, err := src.Manifest(ctx, "ignored", "v2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tag: %v", err)
	}
	if _, err := src.Manifest(ctx, "ignored", "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown digest: %v", err)
	}
	if _, err := src.Blob(ctx, "ignored", endpoint.Descriptor{Digest: "sha256:../../etc"}); err == nil {
		t.Fatal("invalid digest accepted")
	}
	if _, err := NewSource(t.TempDir()); err == nil {
		t.Fatal("a folder without index.json accepted")
	}

	dstDir := filepath.Join(t.TempDir(), "dst")
	dst, err := NewDestination(dstDir)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := dst.ManifestExists(ctx, "repo", "v1", m.Digest); ok || err != nil {
		t.Fatalf("ManifestExists before copy = %v, %v", ok, err)
	}
	mirrortest.CopyImage(t, ctx, src, dst, "v1", "v1")
	if ok, err := dst.ManifestExists(ctx, "repo", "v1", m.Digest); !ok || err != nil {
		t.Fatalf("ManifestExists after copy = %v, %v", ok, err)
	}
	if ok, err := dst.ManifestExists(ctx, "repo", m.Digest.String(), m.Digest); !ok || err != nil {
		t.Fatalf("ManifestExists by digest = %v, %v", ok, err)
	}
	// The copy is a valid layout that go-containerregistry reads back.
	ii, err := layout.ImageIndexFromPath(dstDir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := ii.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != m.Digest.String() {
		t.Fatalf("destination index.json: %+v %v", im, err)
	}
	child, err := ii.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := mirrortest.ValidateIndex(child); err != nil {
		t.Fatal(err)
	}
	// Re-tagging replaces the entry; another tag adds one.
	mirrortest.CopyImage(t, ctx, src, dst, "v1", "v1")
	mirrortest.CopyImage(t, ctx, src, dst, "v1", "other")
	idxFile, _ := readLayoutIndex(dstDir)
	if len(idxFile.Manifests) != 2 {
		t.Fatalf("index.json has %d entries, want 2", len(idxFile.Manifests))
	}

	// PutBlob refuses content that does not match the digest or size.
	good := []byte("hello")
	d := digest.FromBytes(good)
	if err := dst.PutBlob(ctx, "r", endpoint.Descriptor{Digest: d, Size: 5}, bytes.NewReader([]byte("HELLO"))); err == nil {
		t.Fatal("mismatching blob accepted")
	}
	if err := dst.PutBlob(ctx, "r", endpoint.Descriptor{Digest: d, Size: 6}, bytes.NewReader(good)); err == nil {
		t.Fatal("wrong size accepted")
	}
	if ok, _ := dst.BlobExists(ctx, "r", endpoint.Descriptor{Digest: d, Size: 5}); ok {
		t.Fatal("a refused blob was committed")
	}
	if err := dst.PutBlob(ctx, "r", endpoint.Descriptor{Digest: d, Size: 5}, bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	rc, err := dst.Source().Blob(ctx, "r", endpoint.Descriptor{Digest: d, Size: 5})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello" {
		t.Fatalf("blob = %q", b)
	}
	if _, err := dst.Source().Blob(ctx, "r", endpoint.Descriptor{Digest: d, Size: 4}); err == nil {
		t.Fatal("size mismatch not reported")
	}
	if ok, _ := dst.MountBlob(ctx, "a", "b", endpoint.Descriptor{Digest: d, Size: 5}); ok {
		t.Fatal("MountBlob returned true")
	}
	if err := dst.PutManifest(ctx, "r", "v1", endpoint.Manifest{Digest: d, Raw: []byte("HELLO")}); err == nil {
		t.Fatal("manifest with a wrong digest accepted")
	}
	// Every file of the layout is readable by all (atomicfile's 0644, not
	// CreateTemp's 0600), and no temporary file is left, refused blobs included.
	err = filepath.WalkDir(dstDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if strings.HasPrefix(e.Name(), ".") || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v", p, fi.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
