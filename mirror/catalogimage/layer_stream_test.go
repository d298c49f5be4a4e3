package catalogimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// TestCatalogLayerDeterministic: the rebuilt layer is the same bytes whatever
// the compression concurrency, reads back with the standard library's gzip as
// the tar of the catalog, and its digest is pinned by a golden file (a change
// of compression changes every rebuilt catalog's digest, so it must be seen).
func TestCatalogLayerDeterministic(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Bigger than a few compression blocks, so that blocks and their
	// dictionaries matter.
	src := filepath.Join(dir, "catalog")
	for i, name := range []string{"a", "b", "c"} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for j := 0; b.Len() < (3+i)<<20; j++ {
			b.WriteString(`{"schema":"olm.bundle","name":"` + name + `.v` + strings.Repeat("1", j%7) + `","image":"quay.io/x/y@sha256:` + strings.Repeat("ab", 32) + `"}` + "\n")
		}
		if err := os.WriteFile(filepath.Join(p, "catalog.json"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var first []byte
	for _, blocks := range []int{1, 2, 3, 16} {
		var buf bytes.Buffer
		diffID, err := writeCatalogTarGzN(ctx, &buf, src, "/configs", []string{"/tmp/cache"}, blocks)
		if err != nil {
			t.Fatal(err)
		}
		// The diffID returned is that of the tar inside.
		zr, err := gzip.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, zr); err != nil {
			t.Fatal(err)
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID.String() {
			t.Fatalf("diffID %s, the tar's digest is %s", diffID, got)
		}
		if first == nil {
			first = buf.Bytes()
			continue
		}
		if !bytes.Equal(first, buf.Bytes()) {
			t.Fatalf("%d blocks at once: %d bytes differ from 1 block at once (%d bytes)", blocks, buf.Len(), len(first))
		}
	}
	zr, err := gzip.NewReader(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() && zr.ModTime.Unix() != 0 {
		t.Errorf("gzip header time %v, want 0", zr.ModTime)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("standard gzip/tar cannot read the layer: %v", err)
		}
		names = append(names, h.Name)
	}
	want := "configs/ configs/.wh..wh..opq configs/a/ configs/a/catalog.json configs/b/ configs/b/catalog.json configs/c/ configs/c/catalog.json tmp/.wh.cache"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("layer entries\n got %s\nwant %s", got, want)
	}
	sum := sha256.Sum256(first)
	got := "sha256:" + hex.EncodeToString(sum[:]) + "\n"
	// A change of compression changes every rebuilt catalog's digest: if that
	// is meant, say so in docs/catalogs.md and rerun with -update.
	golden.Check(t, filepath.Join("testdata", "catalog-layer.digest"), []byte(got))
}

func testTar(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	body := bytes.Repeat([]byte(`{"schema":"olm.package","name":"p"}`+"\n"), 5000)
	if err := tw.WriteHeader(&tar.Header{Name: "configs/p/catalog.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	return b.Bytes()
}

func compressed(t *testing.T, kind string, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch kind {
	case "gzip":
		zw := gzip.NewWriter(&b)
		zw.Write(raw)
		zw.Close()
	case "gzip-2-members":
		for _, part := range [][]byte{raw[:len(raw)/2], raw[len(raw)/2:]} {
			zw := gzip.NewWriter(&b)
			zw.Write(part)
			zw.Close()
		}
	case "zstd":
		zw, _ := zstd.NewWriter(&b)
		zw.Write(raw)
		zw.Close()
	default:
		b.Write(raw)
	}
	return b.Bytes()
}

// TestOpenLayer: gzip (one or several members), zstd and plain tar layers read
// back as the same tar; a layer whose bytes do not match its digest fails at
// the end of the stream with oci.ErrDigestMismatch, and a broken stream fails.
func TestOpenLayer(t *testing.T) {
	raw := testTar(t)
	for _, kind := range []string{"gzip", "gzip-2-members", "zstd", "tar"} {
		t.Run(kind, func(t *testing.T) {
			blob := compressed(t, kind, raw)
			got, err := readLayer(t, static.NewLayer(blob, types.OCILayer))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, raw) {
				t.Fatalf("read %d bytes, want the %d of the tar", len(got), len(raw))
			}
			// The same bytes announced under another digest.
			if _, err := readLayer(t, lying{static.NewLayer(blob, types.OCILayer)}); !errors.Is(err, oci.ErrDigestMismatch) {
				t.Fatalf("a layer that does not match its digest: err %v, want ErrDigestMismatch", err)
			}
		})
	}
	t.Run("truncated gzip", func(t *testing.T) {
		blob := compressed(t, "gzip", raw)
		if _, err := readLayer(t, static.NewLayer(blob[:len(blob)/2], types.OCILayer)); err == nil {
			t.Fatal("a truncated gzip layer read without error")
		}
	})
}

func readLayer(t *testing.T, l v1.Layer) ([]byte, error) {
	t.Helper()
	rc, err := openLayer(l)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// lying is a layer whose Digest is not that of its bytes.
type lying struct{ v1.Layer }

func (lying) Digest() (v1.Hash, error) {
	return v1.NewHash("sha256:" + strings.Repeat("0", 64))
}
