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
// operators.operatorframework.io.index.configs.v1=/configs. Run is `airlock
// registry seed`: Seed with extra stand-in images and the command line's
// registry access options.
//
// seed is product code (linked into airlock for the demo) and must not import
// test support (internal/testutil); it pushes with go-containerregistry's remote
// package and must not know airlock's copy engine or pipeline.
package seed

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/mirror/oci"
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
	// internal/sqliteindex), the label operators.operatorframework.io.index.database.v1,
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
	r, err := oci.ParseReference(ref)
	if err != nil {
		return "", "", err
	}
	h := hash64(ref)
	spec := fakeimage.Spec{
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
		idx, err := fakeimage.Index(spec)
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
		img, err := fakeimage.Image(spec, "linux/amd64")
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
