package catalogimage

import (
	"archive/tar"
	"bytes"
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
	cfg.Config.Labels = map[string]string{ConfigsLabel: "/configs", "vendor": "example"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// wantFullFiles is what Fetch must extract from testCatalogImage.
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
