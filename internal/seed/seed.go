// Package seed fills a registry with a file-based catalog and every image it
// names, so that airlock can be run end to end without the internet: the demo
// (`airlock registry seed`, `make demo`) and the integration tests use it.
//
// Real catalogs name images on quay.io, registry.redhat.io and so on, by tag or
// by digest. Seed builds one small deterministic image per distinct reference
// (some of them multi-arch indexes), pushes it to the seeded registry under the
// same repository path, with the same tag, and rewrites the catalog so that every
// bundle image and related image points at what was pushed (a digest reference
// keeps the digest form, with the new digest). The rewritten catalog is then
// packed as a catalog image like `opm generate dockerfile` builds: an opm-like
// base layer with a stale /tmp/cache, the catalog under /configs, the label
// operators.operatorframework.io.index.configs.v1=/configs.
package seed

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
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
	"github.com/airlock-mirror/airlock/internal/imagetest"
	"github.com/airlock-mirror/airlock/internal/sqlitetest"
	"github.com/airlock-mirror/airlock/mirror"
)

// CatalogLabel is the label that makes an image a file-based catalog image.
const CatalogLabel = "operators.operatorframework.io.index.configs.v1"

// Options says what to seed.
type Options struct {
	// Registry is the registry host to seed ("127.0.0.1:5000").
	Registry string
	// CatalogDir is the file-based catalog to seed.
	CatalogDir string
	// CatalogRepo is the repository path of the catalog image ("demo/demo-index").
	CatalogRepo string
	// CatalogTag is the catalog image's tag (default "v1").
	CatalogTag string
	// CatalogPlatforms makes the catalog a multi-arch index of these platforms
	// ("linux/amd64", "linux/arm64"); empty gives a single linux/amd64 image.
	CatalogPlatforms []string
	// MultiArchEvery makes every Nth image (by a hash of its reference) a two-arch
	// index; 0 means never.
	MultiArchEvery int
	// LayerSize is the size of each image layer in bytes (default 2048).
	LayerSize int
	// WorkDir receives the rewritten catalog (default: a new temporary directory).
	WorkDir string
	// Parallel bounds concurrent image pushes (default 8).
	Parallel int
	// Remote options (transport, auth) for the pushes.
	Remote []remote.Option
	// Insecure allows plain HTTP to Registry.
	Insecure bool
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Images are more images to push a stand-in for (additionalImages of a
	// demo configuration), under their own repository path and tag.
	Images []string
	// SQLiteIndex packs the catalog as an old `opm index add` image instead: the
	// rewritten catalog as a SQLite database at /database/index.db (see
	// internal/sqlitetest), the label operators.operatorframework.io.index.database.v1,
	// the command `opm registry serve --database /database/index.db`.
	SQLiteIndex bool
}

// Result is what Seed pushed.
type Result struct {
	// Catalog is the catalog image reference ("REGISTRY/REPO:TAG").
	Catalog string
	// CatalogDigest is its manifest digest.
	CatalogDigest digest.Digest
	// CatalogDir is the rewritten catalog on disk.
	CatalogDir string
	// Images maps every reference of the original catalog to the seeded one.
	Images map[string]string
	// Digests maps every seeded reference to its manifest digest.
	Digests map[string]digest.Digest
	// Warnings from reading the catalog (empty images and so on).
	Warnings []string
	// Extra maps each of Options.Images to the seeded reference.
	Extra map[string]string
}

// Seed pushes the catalog and its images, then the extra Images. It is
// idempotent: the same options give the same digests, and what the registry
// already holds is not sent again.
func Seed(ctx context.Context, o Options) (*Result, error) {
	if o.Registry == "" {
		return nil, errors.New("seed: no registry given")
	}
	if o.CatalogDir == "" && len(o.Images) == 0 {
		return nil, errors.New("seed: nothing to seed: give a catalog directory and/or images")
	}
	if o.CatalogDir != "" && o.CatalogRepo == "" {
		return nil, errors.New("seed: a catalog directory needs the repository of its catalog image")
	}
	if o.CatalogTag == "" {
		o.CatalogTag = "v1"
	}
	if o.LayerSize <= 0 {
		o.LayerSize = 2048
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	res := &Result{Images: map[string]string{}, Digests: map[string]digest.Digest{}, Extra: map[string]string{}}
	if o.CatalogDir != "" {
		if err := o.seedCatalog(ctx, res); err != nil {
			return nil, err
		}
	}
	extra := append([]string(nil), o.Images...)
	sort.Strings(extra)
	for _, ref := range extra {
		seeded, d, err := o.pushImage(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("seed image %s: %w", ref, err)
		}
		res.Extra[ref], res.Digests[seeded] = seeded, d
	}
	return res, nil
}

// seedCatalog pushes every image the catalog names, rewrites the catalog to point
// at them and pushes the catalog image.
func (o Options) seedCatalog(ctx context.Context, res *Result) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cat, err := fbc.LoadDir(ctx, o.CatalogDir, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		return err
	}
	uses, warnings := fbc.Images(cat)
	res.Warnings = warnings

	// Build and push one image per distinct reference.
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for _, u := range uses {
		ref := u.Image
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			seeded, d, err := o.pushImage(ctx, ref)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("seed image %s: %w", ref, err)
				}
				return
			}
			res.Images[ref] = seeded
			res.Digests[seeded] = d
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	log.Info("seeded images", "count", len(res.Images), "registry", o.Registry)

	// Rewrite the catalog's references.
	rewrite := func(ref string) string {
		if s, ok := res.Images[ref]; ok {
			return s
		}
		if s, ok := res.Images[ref+":latest"]; ok { // untagged references
			return s
		}
		return ref
	}
	for _, p := range cat.Packages {
		for _, b := range p.Bundles {
			b.Image = rewrite(b.Image)
			ris := make([]fbc.RelatedImage, len(b.RelatedImages))
			for i, ri := range b.RelatedImages {
				ris[i] = fbc.RelatedImage{Name: ri.Name, Image: rewrite(ri.Image)}
			}
			b.RelatedImages = ris
		}
	}
	work := o.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "airlock-seed-"); err != nil {
			return err
		}
	}
	res.CatalogDir = filepath.Join(work, "configs")
	if err := os.RemoveAll(res.CatalogDir); err != nil {
		return err
	}
	if err := fbc.Write(ctx, cat, res.CatalogDir, fbc.WriteOptions{}); err != nil {
		return err
	}

	// Build and push the catalog image.
	res.Catalog = o.Registry + "/" + o.CatalogRepo + ":" + o.CatalogTag
	d, err := o.pushCatalog(ctx, res.Catalog, res.CatalogDir)
	if err != nil {
		return fmt.Errorf("seed catalog image %s: %w", res.Catalog, err)
	}
	res.CatalogDigest = d
	log.Info("seeded catalog", "catalog", res.Catalog, "digest", d)
	return nil
}

func (o Options) nameOpts() []name.Option {
	if o.Insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// pushImage builds the image standing for ref and pushes it; it returns the
// reference the rewritten catalog uses.
func (o Options) pushImage(ctx context.Context, ref string) (string, digest.Digest, error) {
	r, err := mirror.ParseReference(ref)
	if err != nil {
		return "", "", err
	}
	h := hash64(ref)
	spec := imagetest.Spec{
		Seed: h, BaseSeed: hash64(r.Registry) % 4, BaseLayers: 1, Layers: 1,
		LayerSize: o.LayerSize, OCI: h%2 == 0,
	}
	if o.MultiArchEvery > 0 && h%uint64(o.MultiArchEvery) == 0 {
		spec.Platforms = []string{"linux/amd64", "linux/arm64"}
	}
	repo := o.Registry + "/" + r.Path
	var t remote.Taggable
	var dg v1.Hash
	if len(spec.Platforms) > 0 {
		idx, err := imagetest.Index(spec)
		if err != nil {
			return "", "", err
		}
		if dg, err = idx.Digest(); err != nil {
			return "", "", err
		}
		t = idx
		err = o.write(ctx, repo, r.Tag, dg, func(ref name.Reference, opts ...remote.Option) error { return remote.WriteIndex(ref, idx, opts...) })
		if err != nil {
			return "", "", err
		}
	} else {
		img, err := imagetest.Image(spec, "linux/amd64")
		if err != nil {
			return "", "", err
		}
		if dg, err = img.Digest(); err != nil {
			return "", "", err
		}
		t = img
		err = o.write(ctx, repo, r.Tag, dg, func(ref name.Reference, opts ...remote.Option) error { return remote.Write(ref, img, opts...) })
		if err != nil {
			return "", "", err
		}
	}
	_ = t
	d := digest.Digest(dg.String())
	switch {
	case r.Digest != "" && r.Tag != "" && !r.DefaultedTag:
		return repo + ":" + r.Tag + "@" + d.String(), d, nil
	case r.Digest != "":
		return repo + "@" + d.String(), d, nil
	default:
		return repo + ":" + r.Tag, d, nil
	}
}

// write pushes under tag (or by digest when tag is empty), skipping images the
// registry already has.
func (o Options) write(ctx context.Context, repo, tag string, d v1.Hash, push func(name.Reference, ...remote.Option) error) error {
	var ref name.Reference
	var err error
	if tag != "" {
		ref, err = name.NewTag(repo+":"+tag, o.nameOpts()...)
	} else {
		ref, err = name.NewDigest(repo+"@"+d.String(), o.nameOpts()...)
	}
	if err != nil {
		return err
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, o.Remote...)
	if desc, err := remote.Head(ref, opts...); err == nil && desc.Digest == d {
		return nil
	}
	return push(ref, opts...)
}

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
			cf.Config.Labels = map[string]string{mirror.CatalogDatabaseLabel: "/" + sqliteDBPath}
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
	if err := sqlitetest.Write(ctx, cat, db); err != nil {
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
