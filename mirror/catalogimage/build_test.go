package catalogimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
)

// gzipped compresses b.
func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAddLayer: every image of the base (each platform of an index, the
// attestation dropped) gets the folder's files at the folder, with fixed
// times, owner and modes, and the command; the base's layers and creation
// time stay; the same input gives the same digest in another layout, other
// files another digest.
func TestAddLayer(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	ref := reg.Host() + "/ubi9/ubi:latest"
	pushIndex(t, ref, testIndex(t, types.OCIImageIndex))
	work := t.TempDir()
	base, err := FetchImage(ctx, ref, work, "graph-base", FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := ExtractArchive(ctx, bytes.NewReader(gzipped(t, tarBytes(t, []tarEntry{
		{name: "./", typ: tar.TypeDir},
		{name: "version", body: "1.2.3"},
		{name: "channels/", typ: tar.TypeDir},
		{name: "channels/stable-4.16.yaml", body: "name: stable-4.16\n"},
	}))), data, ExtractLimits{}, nil); err != nil {
		t.Fatal(err)
	}
	cmd := []string{"/bin/bash", "-c", "exec cp -rp /var/lib/g/* /mnt"}
	build := func(layoutDir string) *Rebuilt {
		t.Helper()
		r, err := AddLayer(ctx, base, data, "/var/lib/g", cmd, "add the data", RebuildOptions{LayoutDir: layoutDir, Tag: "latest"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1 := build(filepath.Join(work, "one"))
	if r1.Index == nil || r1.MediaType != types.OCIImageIndex {
		t.Fatalf("built %+v, want an index", r1)
	}
	im, err := r1.Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("the built index has %d manifests, want the 2 platform images", len(im.Manifests))
	}
	baseCreated := map[string]v1.Time{}
	bim, _ := base.Index.IndexManifest()
	for _, d := range bim.Manifests {
		if img, err := base.Index.Image(d.Digest); err == nil && d.Platform != nil {
			cf, _ := img.ConfigFile()
			baseCreated[d.Platform.Architecture] = cf.Created
		}
	}
	for _, d := range im.Manifests {
		img, err := r1.Index.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := mirrortest.ValidateImage(img); err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cf.Config.Cmd, cmd) || cf.Config.Entrypoint != nil {
			t.Errorf("%s: entrypoint %q, command %q, want none and %q", d.Platform, cf.Config.Entrypoint, cf.Config.Cmd, cmd)
		}
		want := baseCreated[d.Platform.Architecture].Time
		if want.IsZero() {
			want = time.Unix(0, 0) // a base without a creation time: the epoch
		}
		if !cf.Created.Equal(want) {
			t.Errorf("%s: created %v, want %v", d.Platform, cf.Created, want)
		}
		if h := cf.History[len(cf.History)-1]; h.CreatedBy != "airlock: add the data" {
			t.Errorf("%s: history %+v", d.Platform, h)
		}
		files := flatten(t, img)
		if files["var/lib/g/version"] != "1.2.3" || files["var/lib/g/channels/stable-4.16.yaml"] != "name: stable-4.16\n" || files["bin/opm"] == "" {
			t.Errorf("%s: files %v", d.Platform, keysWithPrefix(files, ""))
		}
		layers, _ := img.Layers()
		checkLayerHeaders(t, layers[len(layers)-1], "var/lib/g/")
	}
	if r2 := build(filepath.Join(work, "two")); r2.Digest != r1.Digest {
		t.Errorf("built again into another layout: %s, first %s", r2.Digest, r1.Digest)
	}
	if err := os.WriteFile(filepath.Join(data, "version"), []byte("1.2.4"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r3 := build(filepath.Join(work, "one")); r3.Digest == r1.Digest {
		t.Error("other graph data gave the same digest")
	}
}

// checkLayerHeaders checks that every entry of l is under prefix, owned by
// 0:0, at the epoch, with mode 0644 or 0755.
func checkLayerHeaders(t *testing.T, l v1.Layer, prefix string) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(h.Name, prefix) || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(0, 0)) || (h.Mode != 0o644 && h.Mode != 0o755) {
			t.Errorf("layer entry %s: uid %d gid %d mtime %v mode %o", h.Name, h.Uid, h.Gid, h.ModTime, h.Mode)
		}
	}
}

// TestExtractArchiveRefuses: entries leaving the folder, an archive over
// the limits, an empty or corrupt one are refused and nothing escapes.
func TestExtractArchiveRefuses(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		archive []byte
		limits  ExtractLimits
		want    string
	}{
		{"dot-dot", tarBytes(t, []tarEntry{{name: "../escape", body: "x"}}), ExtractLimits{}, "outside the image root"},
		{"absolute", tarBytes(t, []tarEntry{{name: "/etc/escape", body: "x"}}), ExtractLimits{}, "absolute entry name"},
		{"symlink out", tarBytes(t, []tarEntry{{name: "ln", typ: tar.TypeSymlink, link: "../../etc"}, {name: "ln/passwd", body: "x"}}), ExtractLimits{}, ""},
		{"too large", gzipped(t, tarBytes(t, []tarEntry{{name: "big", body: strings.Repeat("x", 2048)}})), ExtractLimits{MaxBytes: 1024}, "extraction limit"},
		{"too many", tarBytes(t, []tarEntry{{name: "a", body: "1"}, {name: "b", body: "2"}, {name: "c", body: "3"}}), ExtractLimits{MaxEntries: 2}, "extraction limit"},
		{"empty", tarBytes(t, nil), ExtractLimits{}, "holds no file"},
		{"corrupt gzip", gzipped(t, tarBytes(t, []tarEntry{{name: "a", body: "1"}}))[:40], ExtractLimits{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "in")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			err := ExtractArchive(ctx, bytes.NewReader(tc.archive), dst, tc.limits, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ExtractArchive: %v, want an error saying %q", err, tc.want)
			}
			if got := listFiles(t, parent); len(got) > 0 && !strings.HasPrefix(got[0], "in/") {
				t.Errorf("written outside the folder: %v", got)
			}
		})
	}
}

// FuzzExtractArchive: no archive makes ExtractArchive panic or write
// outside its folder.
func FuzzExtractArchive(f *testing.F) {
	f.Add(tarBytes(f, []tarEntry{{name: "channels/a.yaml", body: "x"}}))
	f.Add(gzipped(f, tarBytes(f, []tarEntry{{name: "./", typ: tar.TypeDir}, {name: "ln", typ: tar.TypeSymlink, link: "/etc"}})))
	f.Fuzz(func(t *testing.T, b []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "in")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = ExtractArchive(context.Background(), bytes.NewReader(b), dst, ExtractLimits{MaxBytes: 1 << 20, MaxEntries: 1000}, nil)
		entries, _ := os.ReadDir(parent)
		if len(entries) != 1 {
			t.Fatalf("written beside the folder: %v", entries)
		}
	})
}
