package catalogimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

func TestFetchCatalog(t *testing.T) {
	reg := startRegistry(t)
	ctx := context.Background()
	for kind, mt := range map[string]types.MediaType{"oci": types.OCIManifestSchema1, "docker": types.DockerManifestSchema2} {
		t.Run(kind, func(t *testing.T) {
			img := testCatalogImage(t, mt, "amd64")
			ref := reg.Host() + "/ns/catalog-" + kind + ":v1"
			push(t, ref, img)
			work := t.TempDir()
			fc, err := Fetch(ctx, ref, work, FetchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if fc.Digest.String() != mirrortest.DigestOf(t, img) {
				t.Errorf("Digest = %s, want %s", fc.Digest, mirrortest.DigestOf(t, img))
			}
			if fc.Label != "/configs" || fc.Index != nil || fc.Cached {
				t.Errorf("Label=%q Index=%v Cached=%v", fc.Label, fc.Index, fc.Cached)
			}
			wantDir := filepath.Join(work, "catalogs", catalogDirName(fc.Source.Repository()), fc.Digest.Encoded(), "configs")
			if fc.ConfigsDir != wantDir {
				t.Errorf("ConfigsDir = %s, want %s", fc.ConfigsDir, wantDir)
			}
			if got := listFiles(t, fc.ConfigsDir); strings.Join(got, ",") != strings.Join(wantFullFiles, ",") {
				t.Errorf("extracted %v, want %v", got, wantFullFiles)
			}
			b, err := os.ReadFile(filepath.Join(fc.ConfigsDir, "ln"))
			want, _ := os.ReadFile("testdata/catalog/full/foo/catalog.json")
			if err != nil || !bytes.Equal(b, want) {
				t.Errorf("symlink ln does not read as foo/catalog.json: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(fc.ConfigsDir, "hard")); string(b) != "kept" {
				t.Errorf("hard link content = %q", b)
			}
			if fc.PinnedRef() != fc.Source.Repository()+"@"+fc.Digest.String() {
				t.Errorf("PinnedRef = %s", fc.PinnedRef())
			}

			// A second fetch finds the extraction complete and downloads no layer.
			reg.Reset()
			fc2, err := Fetch(ctx, "docker://"+ref, work, FetchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !fc2.Cached || fc2.ConfigsDir != fc.ConfigsDir {
				t.Errorf("second fetch: Cached=%v dir=%s", fc2.Cached, fc2.ConfigsDir)
			}
			if n := reg.Counts().BlobGET; n > 1 { // the config only
				t.Errorf("second fetch made %d blob GETs, want at most 1 (the config)", n)
			}

			// An interrupted extraction (no marker) is redone.
			if err := os.Remove(filepath.Join(filepath.Dir(fc.ConfigsDir), completeMarker)); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(fc.ConfigsDir, "foo", "catalog.json"))
			fc3, err := Fetch(ctx, ref, work, FetchOptions{})
			if err != nil || fc3.Cached {
				t.Fatalf("fetch after interruption: cached=%v err=%v", fc3 != nil && fc3.Cached, err)
			}
			if got := listFiles(t, fc3.ConfigsDir); strings.Join(got, ",") != strings.Join(wantFullFiles, ",") {
				t.Errorf("re-extracted %v, want %v", got, wantFullFiles)
			}
		})
	}
}

func TestFetchCatalogPinsDigest(t *testing.T) {
	reg := startRegistry(t)
	ctx := context.Background()
	a := testCatalogImage(t, types.OCIManifestSchema1, "amd64")
	ref := reg.Host() + "/ns/moving:v1"
	push(t, ref, a)
	fc, err := Fetch(ctx, ref, t.TempDir(), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The tag moves after the fetch; the fetched catalog still is image a.
	b, err := mutate.AppendLayers(a, tarLayer(t, types.OCILayer, tarEntry{name: "configs/new.json", body: "{}"}))
	if err != nil {
		t.Fatal(err)
	}
	push(t, ref, b)
	if got := mirrortest.DigestOf(t, fc.Image); got != mirrortest.DigestOf(t, a) {
		t.Fatalf("fetched image is %s after the tag moved, want %s", got, mirrortest.DigestOf(t, a))
	}
	layers, err := fc.Image.Layers()
	if err != nil || len(layers) != 3 {
		t.Fatalf("fetched image has %d layers (%v), want 3", len(layers), err)
	}
	// By digest.
	fc2, err := Fetch(ctx, fc.PinnedRef(), t.TempDir(), FetchOptions{})
	if err != nil || fc2.Digest != fc.Digest {
		t.Fatalf("fetch by digest: %v, %v", fc2, err)
	}
}
func TestFetchCatalogIndex(t *testing.T) {
	reg := startRegistry(t)
	ctx := context.Background()
	idx := testIndex(t, types.OCIImageIndex)
	ref := reg.Host() + "/ns/multi:v1"
	pushIndex(t, ref, idx)
	fc, err := Fetch(ctx, ref, t.TempDir(), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fc.Digest.String() != mirrortest.DigestOf(t, idx) || fc.Index == nil {
		t.Fatalf("Digest = %s (index %s), Index=%v", fc.Digest, mirrortest.DigestOf(t, idx), fc.Index)
	}
	if fc.Platform == nil || fc.Platform.Architecture != "amd64" {
		t.Fatalf("Platform = %v, want linux/amd64", fc.Platform)
	}
	if got := listFiles(t, fc.ConfigsDir); strings.Join(got, ",") != strings.Join(wantFullFiles, ",") {
		t.Errorf("extracted %v, want %v", got, wantFullFiles)
	}

	// Without linux/amd64, the first image is taken.
	arm := testCatalogImage(t, types.OCIManifestSchema1, "arm64")
	only := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	pushIndex(t, reg.Host()+"/ns/armonly:v1", only)
	fc, err = Fetch(ctx, reg.Host()+"/ns/armonly:v1", t.TempDir(), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fc.Platform == nil || fc.Platform.Architecture != "arm64" || mirrortest.DigestOf(t, fc.Image) != mirrortest.DigestOf(t, arm) {
		t.Fatalf("Platform = %v", fc.Platform)
	}
}

func TestFetchCatalogErrors(t *testing.T) {
	reg := startRegistry(t)
	ctx := context.Background()
	build := func(labels map[string]string, layers ...v1.Layer) v1.Image {
		img, err := mutate.AppendLayers(empty.Image, layers...)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := img.ConfigFile()
		cfg = cfg.DeepCopy()
		cfg.Config.Labels = labels
		img, err = mutate.ConfigFile(img, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	fbc := map[string]string{ConfigsLabel: "/configs"}
	ok := tarEntry{name: "configs/a.json", body: "{}"}
	tests := []struct {
		name    string
		img     v1.Image
		wantIs  error
		wantMsg string
	}{
		{"no label", build(nil, tarLayer(t, types.OCILayer, ok)), ErrNotFBCImage, "not a file-based catalog image"},
		{"sqlite without its database", build(map[string]string{DatabaseLabel: "/database/index.db"}, tarLayer(t, types.OCILayer, ok, tarEntry{name: "database/other", body: "x"})), ErrNotFBCImage, "holds no such file"},
		{"sqlite at the root", build(map[string]string{DatabaseLabel: "/index.db"}, tarLayer(t, types.OCILayer, ok)), ErrNotFBCImage, "in a folder"},
		{"root label", build(map[string]string{ConfigsLabel: "/"}, tarLayer(t, types.OCILayer, ok)), ErrNotFBCImage, "image root"},
		{"empty folder", build(fbc, tarLayer(t, types.OCILayer, tarEntry{name: "other/a.json"})), ErrNotFBCImage, "no layer holds files there"},
		{"dotdot", build(fbc, tarLayer(t, types.OCILayer, ok, tarEntry{name: "../evil", body: "x"})), ErrUnsafeLayer, "outside the image root"},
		{"dotdot in configs", build(fbc, tarLayer(t, types.OCILayer, tarEntry{name: "configs/../../evil", body: "x"})), ErrUnsafeLayer, "outside the image root"},
		{"absolute", build(fbc, tarLayer(t, types.OCILayer, tarEntry{name: "/configs/a.json", body: "x"})), ErrUnsafeLayer, "absolute"},
		{"escaping symlink", build(fbc, tarLayer(t, types.OCILayer, ok, tarEntry{name: "configs/l", typ: tar.TypeSymlink, link: "../../etc/passwd"})), ErrUnsafeLayer, "points outside /configs"},
		{"absolute symlink out", build(fbc, tarLayer(t, types.OCILayer, ok, tarEntry{name: "configs/l", typ: tar.TypeSymlink, link: "/etc/passwd"})), ErrUnsafeLayer, "points outside /configs"},
		{"opaque catalog", build(fbc, tarLayer(t, types.OCILayer, ok), tarLayer(t, types.OCILayer, tarEntry{name: "configs/.wh..wh..opq"})), ErrNotFBCImage, "no layer holds files"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := reg.Host() + "/ns/bad:" + strings.Repeat("x", i+1)
			push(t, ref, tc.img)
			work := t.TempDir()
			_, err := Fetch(ctx, ref, work, FetchOptions{})
			if err == nil || !errors.Is(err, tc.wantIs) || !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), ref) {
				t.Fatalf("error = %v, want %v containing %q and the reference", err, tc.wantIs, tc.wantMsg)
			}
			if _, err := os.Stat(filepath.Join(work, "..", "evil")); err == nil {
				t.Fatal("wrote outside the work dir")
			}
			// No complete extraction is left behind.
			m, _ := filepath.Glob(filepath.Join(work, "catalogs", "*", "*", completeMarker))
			if len(m) != 0 {
				t.Fatalf("marker written for a failed fetch: %v", m)
			}
		})
	}

	if _, err := Fetch(ctx, reg.Host()+"/ns/missing:v1", t.TempDir(), FetchOptions{}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing image: %v", err)
	}
	if _, err := Fetch(ctx, "Bad Ref", t.TempDir(), FetchOptions{}); !errors.Is(err, oci.ErrInvalidReference) {
		t.Fatalf("bad reference: %v", err)
	}
	if _, err := Fetch(ctx, "oci://"+t.TempDir(), t.TempDir(), FetchOptions{}); !errors.Is(err, oci.ErrInvalidReference) {
		t.Fatalf("oci:// without a layout: %v", err)
	}
}

func TestFetchCatalogOCILayout(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "my:layout")
	img := testCatalogImage(t, types.OCIManifestSchema1, "amd64")
	idx := testIndex(t, types.OCIImageIndex)
	mirrortest.WriteLayout(t, dir, func(p layout.Path) {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{oci.AnnotationRefName: "v1"})); err != nil {
			t.Fatal(err)
		}
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{oci.AnnotationRefName: "example.com/cat:multi"})); err != nil {
			t.Fatal(err)
		}
	})
	tests := []struct {
		ref, want string
		index     bool
	}{
		{"oci://" + dir, mirrortest.DigestOf(t, img), false},
		{"oci://" + dir + ":v1", mirrortest.DigestOf(t, img), false},
		{"oci://" + dir + ":multi", mirrortest.DigestOf(t, idx), true},
	}
	work := t.TempDir()
	for _, tc := range tests {
		fc, err := Fetch(ctx, tc.ref, work, FetchOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if fc.Digest.String() != tc.want || (fc.Index != nil) != tc.index || fc.LayoutPath != dir {
			t.Fatalf("%s: digest %s index %v layout %s", tc.ref, fc.Digest, fc.Index != nil, fc.LayoutPath)
		}
		if got := listFiles(t, fc.ConfigsDir); strings.Join(got, ",") != strings.Join(wantFullFiles, ",") {
			t.Errorf("%s: extracted %v, want %v", tc.ref, got, wantFullFiles)
		}
		if !strings.HasPrefix(fc.PinnedRef(), "oci://"+dir+"@sha256:") {
			t.Errorf("PinnedRef = %s", fc.PinnedRef())
		}
	}
	if _, err := Fetch(ctx, "oci://"+dir+":nope", work, FetchOptions{}); err == nil || !strings.Contains(err.Error(), `no manifest named "nope"`) {
		t.Fatalf("unknown tag: %v", err)
	}
}

// FuzzExtract feeds arbitrary bytes as a layer to the extractor: it must never
// panic and never create anything outside its folder.
func FuzzExtract(f *testing.F) {
	seeds := [][]tarEntry{
		{{name: "configs/a.json", body: "{}"}, {name: "configs/d/", typ: tar.TypeDir}, {name: "configs/d/b.yaml", body: "x: 1"}},
		{{name: "../evil", body: "x"}},
		{{name: "configs/../../evil", body: "x"}},
		{{name: "/abs", body: "x"}},
		{{name: "configs/l", typ: tar.TypeSymlink, link: "../../../etc"}, {name: "configs/l/passwd", body: "x"}},
		{{name: "configs/l", typ: tar.TypeSymlink, link: "d"}, {name: "configs/l/x", body: "x"}},
		{{name: "configs/h", typ: tar.TypeLink, link: "etc/passwd"}},
		{{name: "configs/.wh..wh..opq"}, {name: "configs/.wh.a"}, {name: ".wh.configs"}},
		{{name: "configs", body: "a file"}, {name: "configs/x", body: "y"}},
		{{name: "configs/a", body: "1"}, {name: "configs/a/b", body: "2"}},
	}
	for _, s := range seeds {
		f.Add(tarBytes(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "root")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		x := newExtractor(root, "/configs", ExtractLimits{MaxBytes: 1 << 20, MaxEntries: 1000}, discardLogger())
		defer x.dropCursor()
		_ = x.layer(context.Background(), bytes.NewReader(data))
		_ = x.layer(context.Background(), bytes.NewReader(data)) // a lower layer with the same content
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "root" {
			t.Fatalf("extraction created %v next to its folder", entries)
		}
		err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				if filepath.IsAbs(target) {
					t.Fatalf("absolute symlink %s -> %s", p, target)
				}
				resolved := filepath.Join(filepath.Dir(p), target)
				if resolved != dst && !strings.HasPrefix(resolved, dst+string(filepath.Separator)) {
					t.Fatalf("symlink %s -> %s leaves the folder", p, target)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
