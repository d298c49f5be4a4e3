package mirror

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// tarEntry is one entry of a test layer.
type tarEntry struct {
	name string
	typ  byte // tar.TypeReg when 0
	body string
	link string
}

func tarBytes(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func tarLayer(t testing.TB, mt types.MediaType, entries ...tarEntry) v1.Layer {
	t.Helper()
	b := tarBytes(t, entries)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(mt))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// dirEntries returns tar entries for the files of dir, under prefix.
func dirEntries(t testing.TB, dir, prefix string) []tarEntry {
	t.Helper()
	var out []tarEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := prefix + "/" + filepath.ToSlash(rel)
		if rel == "." {
			name = prefix + "/"
		}
		if d.IsDir() {
			out = append(out, tarEntry{name: strings.TrimSuffix(name, "/") + "/", typ: tar.TypeDir})
			return nil
		}
		b, err := os.ReadFile(p)
		out = append(out, tarEntry{name: name, body: string(b)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testCatalogImage builds a catalog image like `opm generate dockerfile` does: a
// base layer (opm, /tmp/cache, an old catalog), the catalog layer from
// testdata/catalog/full plus extra files, and a layer deleting some of them.
func testCatalogImage(t testing.TB, mt types.MediaType, arch string) v1.Image {
	t.Helper()
	lmt := types.OCILayer
	if mt == types.DockerManifestSchema2 {
		lmt = types.DockerLayer
	}
	base := tarLayer(t, lmt,
		tarEntry{name: "bin/", typ: tar.TypeDir},
		tarEntry{name: "bin/opm", body: "opm binary for " + arch},
		tarEntry{name: "tmp/", typ: tar.TypeDir},
		tarEntry{name: "tmp/cache/", typ: tar.TypeDir},
		tarEntry{name: "tmp/cache/pogreb.v1/db/00000.psg", body: "stale cache"},
		tarEntry{name: "configs/", typ: tar.TypeDir},
		tarEntry{name: "configs/old/catalog.json", body: "hidden by an opaque whiteout"},
		tarEntry{name: "configs/gone/x.json", body: "hidden by a whiteout"},
		tarEntry{name: "etc/passwd", body: "root:x:0:0"},
	)
	cat := append(dirEntries(t, "testdata/catalog/full", "configs"),
		tarEntry{name: "configs/old/.wh..wh..opq"},
		tarEntry{name: "configs/old/kept.json", body: "kept"},
		tarEntry{name: "configs/stale.json", body: "deleted by the next layer"},
		tarEntry{name: "configs/ln", typ: tar.TypeSymlink, link: "foo/catalog.json"},
		tarEntry{name: "configs/hard", typ: tar.TypeLink, link: "configs/old/kept.json"},
		tarEntry{name: "configs/fifo", typ: tar.TypeFifo},
		tarEntry{name: "other/ignored.json", body: "outside the catalog folder"},
	)
	catalog := tarLayer(t, lmt, cat...)
	del := tarLayer(t, lmt,
		tarEntry{name: "configs/.wh.stale.json"},
		tarEntry{name: "configs/.wh.gone"},
	)
	img := mutate.MediaType(empty.Image, mt)
	if mt == types.DockerManifestSchema2 {
		img = mutate.ConfigMediaType(img, types.DockerConfigJSON)
	}
	img, err := mutate.AppendLayers(img, base, catalog, del)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	if arch == "amd64" { // the arm64 image keeps a zero creation time
		cfg.Created = v1.Time{Time: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}
	}
	cfg.Config.Entrypoint = []string{"/bin/opm"}
	cfg.Config.Cmd = []string{"serve", "/configs", "--cache-dir=/tmp/cache"}
	cfg.Config.Labels = map[string]string{CatalogConfigsLabel: "/configs", "vendor": "example"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// wantFullFiles is what FetchCatalog must extract from testCatalogImage.
var wantFullFiles = []string{"bar/catalog.yaml", "foo/catalog.json", "hard", "ln", "old/kept.json"}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func startRegistry(t testing.TB) *registrytest.Registry { return registrytest.Start(t) }

func push(t testing.TB, ref string, img v1.Image) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
}

func pushIndex(t testing.TB, ref string, idx v1.ImageIndex) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
}

// listFiles returns the sorted relative paths of the non-directory entries under dir.
func listFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func digestOf(t testing.TB, d interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func TestFetchCatalog(t *testing.T) {
	reg := startRegistry(t)
	ctx := context.Background()
	for kind, mt := range map[string]types.MediaType{"oci": types.OCIManifestSchema1, "docker": types.DockerManifestSchema2} {
		t.Run(kind, func(t *testing.T) {
			img := testCatalogImage(t, mt, "amd64")
			ref := reg.Host() + "/ns/catalog-" + kind + ":v1"
			push(t, ref, img)
			work := t.TempDir()
			fc, err := FetchCatalog(ctx, ref, work)
			if err != nil {
				t.Fatal(err)
			}
			if fc.Digest.String() != digestOf(t, img) {
				t.Errorf("Digest = %s, want %s", fc.Digest, digestOf(t, img))
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
			fc2, err := FetchCatalog(ctx, "docker://"+ref, work)
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
			fc3, err := FetchCatalog(ctx, ref, work)
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
	fc, err := FetchCatalog(ctx, ref, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The tag moves after the fetch; the fetched catalog still is image a.
	b, err := mutate.AppendLayers(a, tarLayer(t, types.OCILayer, tarEntry{name: "configs/new.json", body: "{}"}))
	if err != nil {
		t.Fatal(err)
	}
	push(t, ref, b)
	if got := digestOf(t, fc.Image); got != digestOf(t, a) {
		t.Fatalf("fetched image is %s after the tag moved, want %s", got, digestOf(t, a))
	}
	layers, err := fc.Image.Layers()
	if err != nil || len(layers) != 3 {
		t.Fatalf("fetched image has %d layers (%v), want 3", len(layers), err)
	}
	// By digest.
	fc2, err := FetchCatalog(ctx, fc.PinnedRef(), t.TempDir())
	if err != nil || fc2.Digest != fc.Digest {
		t.Fatalf("fetch by digest: %v, %v", fc2, err)
	}
}

func testIndex(t testing.TB, mt types.MediaType) v1.ImageIndex {
	t.Helper()
	imt := types.OCIManifestSchema1
	if mt == types.DockerManifestList {
		imt = types.DockerManifestSchema2
	}
	arm := testCatalogImage(t, imt, "arm64")
	amd := testCatalogImage(t, imt, "amd64")
	idx := mutate.IndexMediaType(empty.Index, mt)
	adds := []mutate.IndexAddendum{
		{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	}
	if mt == types.OCIImageIndex {
		att, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), tarLayer(t, types.OCILayer, tarEntry{name: "att.json", body: "{}"}))
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
			Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest"},
		}})
	}
	return mutate.AppendManifests(idx, adds...)
}

func TestFetchCatalogIndex(t *testing.T) {
	reg := startRegistry(t)
	ctx := context.Background()
	idx := testIndex(t, types.OCIImageIndex)
	ref := reg.Host() + "/ns/multi:v1"
	pushIndex(t, ref, idx)
	fc, err := FetchCatalog(ctx, ref, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if fc.Digest.String() != digestOf(t, idx) || fc.Index == nil {
		t.Fatalf("Digest = %s (index %s), Index=%v", fc.Digest, digestOf(t, idx), fc.Index)
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
	fc, err = FetchCatalog(ctx, reg.Host()+"/ns/armonly:v1", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if fc.Platform == nil || fc.Platform.Architecture != "arm64" || digestOf(t, fc.Image) != digestOf(t, arm) {
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
	fbc := map[string]string{CatalogConfigsLabel: "/configs"}
	ok := tarEntry{name: "configs/a.json", body: "{}"}
	tests := []struct {
		name    string
		img     v1.Image
		wantIs  error
		wantMsg string
	}{
		{"no label", build(nil, tarLayer(t, types.OCILayer, ok)), ErrNotFBCImage, "not a file-based catalog image"},
		{"sqlite without its database", build(map[string]string{CatalogDatabaseLabel: "/database/index.db"}, tarLayer(t, types.OCILayer, ok, tarEntry{name: "database/other", body: "x"})), ErrNotFBCImage, "holds no such file"},
		{"sqlite at the root", build(map[string]string{CatalogDatabaseLabel: "/index.db"}, tarLayer(t, types.OCILayer, ok)), ErrNotFBCImage, "in a folder"},
		{"root label", build(map[string]string{CatalogConfigsLabel: "/"}, tarLayer(t, types.OCILayer, ok)), ErrNotFBCImage, "image root"},
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
			_, err := FetchCatalog(ctx, ref, work)
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

	if _, err := FetchCatalog(ctx, reg.Host()+"/ns/missing:v1", t.TempDir()); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing image: %v", err)
	}
	if _, err := FetchCatalog(ctx, "Bad Ref", t.TempDir()); !errors.Is(err, ErrInvalidReference) {
		t.Fatalf("bad reference: %v", err)
	}
	if _, err := FetchCatalog(ctx, "oci://"+t.TempDir(), t.TempDir()); !errors.Is(err, ErrInvalidReference) {
		t.Fatalf("oci:// without a layout: %v", err)
	}
}

func writeLayout(t testing.TB, dir string, add func(p layout.Path)) {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	add(p)
}

func TestFetchCatalogOCILayout(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "my:layout")
	img := testCatalogImage(t, types.OCIManifestSchema1, "amd64")
	idx := testIndex(t, types.OCIImageIndex)
	writeLayout(t, dir, func(p layout.Path) {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: "v1"})); err != nil {
			t.Fatal(err)
		}
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: "example.com/cat:multi"})); err != nil {
			t.Fatal(err)
		}
	})
	tests := []struct {
		ref, want string
		index     bool
	}{
		{"oci://" + dir, digestOf(t, img), false},
		{"oci://" + dir + ":v1", digestOf(t, img), false},
		{"oci://" + dir + ":multi", digestOf(t, idx), true},
	}
	work := t.TempDir()
	for _, tc := range tests {
		fc, err := FetchCatalog(ctx, tc.ref, work)
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
	if _, err := FetchCatalog(ctx, "oci://"+dir+":nope", work); err == nil || !strings.Contains(err.Error(), `no manifest named "nope"`) {
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
