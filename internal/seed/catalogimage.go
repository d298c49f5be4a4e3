package seed

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/internal/sqliteindex"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
)

// The catalog image: an opm-like base layer, the catalog (file-based, or a SQLite
// index database), the label that makes it a catalog.

var epoch = time.Unix(0, 0).UTC()

// pushCatalog builds the catalog image (or index) from dir and pushes it.
func (o Options) pushCatalog(ctx context.Context, ref, dir string) (digest.Digest, error) {
	base, err := tarLayer(baseFiles())
	if err != nil {
		return "", err
	}
	var files []file
	if o.SQLiteIndex {
		files, err = sqliteFiles(ctx, dir)
	} else {
		files, err = dirFiles(dir, "configs")
	}
	if err != nil {
		return "", err
	}
	configs, err := tarLayer(files)
	if err != nil {
		return "", err
	}
	platforms := o.CatalogPlatforms
	if len(platforms) == 0 {
		platforms = []string{"linux/amd64"}
	}
	var imgs []v1.Image
	for _, pl := range platforms {
		p, err := v1.ParsePlatform(pl)
		if err != nil {
			return "", err
		}
		img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		if img, err = mutate.AppendLayers(img, base, configs); err != nil {
			return "", err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return "", err
		}
		cf = cf.DeepCopy()
		cf.Created = v1.Time{Time: epoch}
		cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
		cf.Config.Entrypoint = []string{"/bin/opm"}
		cf.Config.Cmd = []string{"serve", "/configs", "--cache-dir=/tmp/cache"}
		cf.Config.Labels = map[string]string{CatalogLabel: "/configs"}
		if o.SQLiteIndex {
			cf.Config.Cmd = []string{"registry", "serve", "--database", "/" + sqliteDBPath}
			cf.Config.Labels = map[string]string{catalogimage.DatabaseLabel: "/" + sqliteDBPath}
		}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return "", err
		}
		imgs = append(imgs, img)
	}
	tag, err := name.NewTag(ref, o.nameOpts()...)
	if err != nil {
		return "", err
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, o.Remote...)
	if len(o.CatalogPlatforms) == 0 {
		d, err := imgs[0].Digest()
		if err != nil {
			return "", err
		}
		return digest.Digest(d.String()), remote.Write(tag, imgs[0], opts...)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range imgs {
		p, _ := v1.ParsePlatform(platforms[i])
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return digest.Digest(d.String()), remote.WriteIndex(tag, idx, opts...)
}

// sqliteDBPath is where a SQLite index image holds its database.
const sqliteDBPath = "database/index.db"

// sqliteFiles is the layer content of a SQLite index image holding the catalog
// in dir.
func sqliteFiles(ctx context.Context, dir string) ([]file, error) {
	cat, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{})
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "airlock-seed-db-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	db := filepath.Join(tmp, "index.db")
	if err := sqliteindex.Write(ctx, cat, db); err != nil {
		return nil, fmt.Errorf("writing the SQLite database: %w", err)
	}
	b, err := os.ReadFile(db)
	if err != nil {
		return nil, err
	}
	return []file{{name: "database", dir: true, mode: 0o755}, {name: sqliteDBPath, mode: 0o644, data: b}}, nil
}

type file struct {
	name string
	mode int64
	dir  bool
	data []byte
}

func baseFiles() []file {
	return []file{
		{name: "bin", dir: true, mode: 0o755},
		{name: "bin/opm", mode: 0o755, data: []byte("#!/bin/sh\n# stand-in for opm in airlock's seeded catalogs\nexit 0\n")},
		{name: "tmp", dir: true, mode: 0o1777},
		{name: "tmp/cache", dir: true, mode: 0o755},
		{name: "tmp/cache/digest", mode: 0o644, data: []byte("stale cache of the original catalog\n")},
	}
}

// dirFiles lists dir's files under prefix, sorted.
func dirFiles(dir, prefix string) ([]file, error) {
	var out []file
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		n := prefix
		if rel != "." {
			n = prefix + "/" + filepath.ToSlash(rel)
		}
		if d.IsDir() {
			out = append(out, file{name: n, dir: true, mode: 0o755})
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, file{name: n, mode: 0o644, data: b})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

// tarLayer packs files into a deterministic gzip layer.
func tarLayer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, strings.TrimSuffix(f.name, "/")+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
