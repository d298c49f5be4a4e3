package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// copyImage copies the manifest named ref (and everything it references) from
// src to dst, children first, as the copy engine does.
func copyImage(t *testing.T, ctx context.Context, src endpoint.Source, dst endpoint.Destination, ref, dstRef string) endpoint.Manifest {
	t.Helper()
	m, err := src.Manifest(ctx, "repo", ref)
	if err != nil {
		t.Fatalf("Manifest(%s): %v", ref, err)
	}
	var parsed struct {
		Config    *endpoint.Descriptor  `json:"config"`
		Layers    []endpoint.Descriptor `json:"layers"`
		Manifests []endpoint.Descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(m.Raw, &parsed); err != nil {
		t.Fatal(err)
	}
	for _, c := range parsed.Manifests {
		copyImage(t, ctx, src, dst, c.Digest.String(), c.Digest.String())
	}
	blobs := parsed.Layers
	if parsed.Config != nil {
		blobs = append(blobs, *parsed.Config)
	}
	for _, b := range blobs {
		ok, err := dst.BlobExists(ctx, "repo", b)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			continue
		}
		rc, err := src.Blob(ctx, "repo", b)
		if err != nil {
			t.Fatalf("Blob(%s): %v", b.Digest, err)
		}
		err = dst.PutBlob(ctx, "repo", b, rc)
		rc.Close()
		if err != nil {
			t.Fatalf("PutBlob(%s): %v", b.Digest, err)
		}
	}
	if err := dst.PutManifest(ctx, "repo", dstRef, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLayoutSourceAndDestination(t *testing.T) {
	ctx := context.Background()
	srcDir := filepath.Join(t.TempDir(), "src")
	idx := testIndex(t, types.OCIImageIndex)
	writeLayout(t, srcDir, func(p layout.Path) {
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: "quay.io/ns/cat:v1"})); err != nil {
			t.Fatal(err)
		}
	})
	src, err := NewLayoutSource(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Manifest(ctx, "ignored", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if m.Digest.String() != digestOf(t, idx) || m.MediaType != string(types.OCIImageIndex) {
		t.Fatalf("Manifest(v1) = %s %s, want %s", m.Digest, m.MediaType, digestOf(t, idx))
	}
	if _, err := src.Manifest(ctx, "ignored", "v2"); !errors.Is(err, ErrLayoutNotFound) {
		t.Fatalf("unknown tag: %v", err)
	}
	if _, err := src.Manifest(ctx, "ignored", "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, ErrLayoutNotFound) {
		t.Fatalf("unknown digest: %v", err)
	}
	if _, err := src.Blob(ctx, "ignored", endpoint.Descriptor{Digest: "sha256:../../etc"}); err == nil {
		t.Fatal("invalid digest accepted")
	}
	if _, err := NewLayoutSource(t.TempDir()); err == nil {
		t.Fatal("a folder without index.json accepted")
	}

	dstDir := filepath.Join(t.TempDir(), "dst")
	dst, err := NewLayoutDestination(dstDir)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := dst.ManifestExists(ctx, "repo", "v1", m.Digest); ok || err != nil {
		t.Fatalf("ManifestExists before copy = %v, %v", ok, err)
	}
	copyImage(t, ctx, src, dst, "v1", "v1")
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
	if err := validateIndex(child); err != nil {
		t.Fatal(err)
	}
	// Re-tagging replaces the entry; another tag adds one.
	copyImage(t, ctx, src, dst, "v1", "v1")
	copyImage(t, ctx, src, dst, "v1", "other")
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

// TestRebuiltCatalogThroughLayoutSource serves a rebuilt catalog with
// NewLayoutSource, as the copy engine will, and checks what it reads.
func TestRebuiltCatalogThroughLayoutSource(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	idx := testIndex(t, types.DockerManifestList)
	ref := reg.Host() + "/ns/cat:v2"
	pushIndex(t, ref, idx)
	fc, err := FetchCatalog(ctx, ref, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := RebuildCatalog(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: filepath.Join(t.TempDir(), "rebuilt")})
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewLayoutSource(r.LayoutDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Manifest(ctx, "any", r.Tag)
	if err != nil {
		t.Fatal(err)
	}
	if m.Digest != r.Digest || m.MediaType != string(types.DockerManifestList) {
		t.Fatalf("Manifest = %s %s, want %s", m.Digest, m.MediaType, r.Digest)
	}
	dst, err := NewLayoutDestination(filepath.Join(t.TempDir(), "copy"))
	if err != nil {
		t.Fatal(err)
	}
	copyImage(t, ctx, src, dst, r.Digest.String(), "v2")
	fb, err := FetchCatalog(ctx, "oci://"+dst.dir+":v2", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if fb.Digest != r.Digest {
		t.Fatalf("copied catalog digest %s, want %s", fb.Digest, r.Digest)
	}
	if got := listFiles(t, fb.ConfigsDir); strings.Join(got, ",") != "foo/catalog.json" {
		t.Fatalf("copied catalog holds %v", got)
	}
}
