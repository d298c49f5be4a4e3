// Package workload generates the copy workload of the benchmarks: N image tags
// (some of them two-arch indexes) spread over a few repositories, sharing a few
// large base layers and carrying unique layers of realistic sizes, plus
// (optionally) a one-bundle file-based catalog image naming every tag, so that
// `airlock mirror` can mirror it like an operator catalog.
//
// Layers are real gzip streams (stored deflate blocks of pseudo-random bytes:
// incompressible, like real layers, and cheap to produce) generated on the fly
// from a seed, so a workload of a gigabyte holds almost nothing in memory: only
// digests, sizes and the small manifests and configs. Everything is
// deterministic for given Options.
//
// Push is the minimal client of the benchmarks' ingestion floor: it sends every
// unique blob once (cross-repository mounts for the other repositories that use
// it) and every manifest once, in parallel, with the fewest requests the
// registry API allows.
package workload

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Media types used by the workload.
const (
	MediaDockerManifest = oci.MediaTypeDockerManifest
	MediaDockerList     = oci.MediaTypeDockerManifestList
	MediaDockerConfig   = "application/vnd.docker.container.image.v1+json"
	MediaDockerLayer    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	MediaOCIManifest    = oci.MediaTypeOCIManifest
	MediaOCIIndex       = oci.MediaTypeOCIIndex
	MediaOCIConfig      = "application/vnd.oci.image.config.v1+json"
	MediaOCILayer       = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// CatalogLabel marks a file-based catalog image.
const CatalogLabel = "operators.operatorframework.io.index.configs.v1"

// Options describe a workload.
type Options struct {
	// Namespace prefixes every repository path ("bench").
	Namespace string
	// Repos is the number of image repositories.
	Repos int
	// Images is the number of single-platform image tags.
	Images int
	// Indexes is the number of two-platform (linux/amd64, linux/arm64) index tags.
	Indexes int
	// BaseLayers is the number of shared base layers; every image manifest uses one.
	BaseLayers int
	// BaseLayerSize is the size of each base layer in bytes.
	BaseLayerSize int64
	// UniqueLayers is the number of layers unique to each image manifest.
	UniqueLayers int
	// UniqueBytes is the total size of the unique layers, spread over every
	// image manifest (an index counts one per platform) with varied layer sizes.
	UniqueBytes int64
	// Seed makes the workload reproducible.
	Seed uint64
	// Packages is the number of operator packages of the catalog AddCatalog
	// builds (0 or 1: one package naming every tag). With more, the tags are
	// dealt out to the packages, each with its own bundle image, so that a
	// heads-only mirror selects them all.
	Packages int
	// OlderBundles adds this many bundles before the head to every package's
	// channel (a replaces chain): they name images that are not in the
	// registry, as a catalog's old releases do; a heads-only mirror skips them.
	OlderBundles int
	// Catalogs deals the packages out to this many catalog images
	// (AddCatalogs; 0 or 1: one catalog): package p goes to catalog
	// p % Catalogs, so a repository's tags are named by several catalogs, as
	// on a site that mirrors Red Hat's four catalogs.
	Catalogs int
	// SharedEvery makes every SharedEvery-th tag named by two packages (the
	// one it is dealt to and the next, in the next catalog): the same image
	// in two catalogs (0: none).
	SharedEvery int
	// Namespaces spreads the repositories over this many namespaces under
	// Namespace (NS/vendor-KK/app-NNNN) instead of NS/app-NN (0: none).
	Namespaces int
	// TagRefs makes the catalog AddCatalog builds name its bundle and related
	// images by tag (repo:tag). By default it pins each by digest
	// (repo@sha256:…), as redhat-operator-index and the other Red Hat catalogs
	// do for every bundle image and relatedImages entry.
	TagRefs bool
}

// Preset returns the options of a named workload:
//   - "reference": the reference workload of docs/benchmarks.md's targets: 130 tags (120 images and 10
//     two-arch indexes) in 12 repositories, 4 shared 40 MB base layers, 0.91 GB
//     of unique blobs;
//   - "quick": 26 tags (24 images, 2 indexes) in 4 repositories, 2 base layers
//     of 8 MB, about 64 MB: the quick benchmark;
//   - "tiny": 5 tags in 2 repositories, under 1 MB: tests;
//   - "catalog": shaped like redhat-operator-index heads-only: 100 packages
//     (each a bundle image and a channel of 9 bundles, the head naming the
//     package's images), 400 tags (380 images, 20 two-arch indexes) in 250
//     repositories, 6 shared 40 MB base layers, 2 unique layers per image:
//     500 images, about 1,470 unique blobs, 1.5 GB;
//   - "catalog-quick": the same at 1/10 (10 packages, 40 tags, 150 MB);
//   - "catalog-small-images": the shape of a real heads-only operator mirror
//     of 61 images (11 packages, 50 tags of which 3 two-arch indexes, in 12
//     repositories beside the bundles') with tiny blobs (about 5 MB in all), so that round trips,
//     not bytes, bound it.
func Preset(name string) (Options, error) {
	switch name {
	case "catalog":
		return Options{Namespace: "bench", Repos: 250, Images: 380, Indexes: 20, BaseLayers: 6, BaseLayerSize: 40_000_000, UniqueLayers: 2, UniqueBytes: 1_260_000_000, Seed: 31, Packages: 100, OlderBundles: 8}, nil
	case "catalog-quick":
		return Options{Namespace: "bench", Repos: 25, Images: 38, Indexes: 2, BaseLayers: 2, BaseLayerSize: 20_000_000, UniqueLayers: 2, UniqueBytes: 110_000_000, Seed: 31, Packages: 10, OlderBundles: 8}, nil
	case "catalog-small-images":
		return Options{Namespace: "bench", Repos: 12, Images: 47, Indexes: 3, BaseLayers: 2, BaseLayerSize: 256 << 10, UniqueLayers: 1, UniqueBytes: 4_000_000, Seed: 61, Packages: 11, OlderBundles: 4}, nil
	case "reference":
		return Options{Namespace: "bench", Repos: 12, Images: 120, Indexes: 10, BaseLayers: 4, BaseLayerSize: 40_000_000, UniqueLayers: 3, UniqueBytes: 750_000_000, Seed: 1}, nil
	case "quick":
		return Options{Namespace: "bench", Repos: 4, Images: 24, Indexes: 2, BaseLayers: 2, BaseLayerSize: 8_000_000, UniqueLayers: 3, UniqueBytes: 48_000_000, Seed: 1}, nil
	case "tiny":
		return Options{Namespace: "bench", Repos: 2, Images: 4, Indexes: 1, BaseLayers: 1, BaseLayerSize: 64 << 10, UniqueLayers: 2, UniqueBytes: 300 << 10, Seed: 1}, nil
	}
	return Options{}, fmt.Errorf("unknown workload preset %q: use reference, quick, tiny, catalog, catalog-quick or catalog-small-images", name)
}

func (o Options) check() error {
	switch {
	case o.Repos < 1:
		return errors.New("workload: need at least 1 repository")
	case o.Images < 0 || o.Indexes < 0 || o.Images+o.Indexes < 1:
		return errors.New("workload: need at least 1 image or index")
	case o.BaseLayers < 0 || o.UniqueLayers < 0 || o.BaseLayers+o.UniqueLayers < 1:
		return errors.New("workload: every image needs at least one layer: set base or unique layers")
	case o.Packages < 0 || o.OlderBundles < 0 || o.Catalogs < 0 || o.SharedEvery < 0 || o.Namespaces < 0:
		return errors.New("workload: packages, older bundles, catalogs, shared tags and namespaces cannot be negative")
	case o.BaseLayerSize < 0 || o.UniqueBytes < 0:
		return errors.New("workload: sizes cannot be negative")
	case o.BaseLayers > 0 && o.BaseLayerSize == 0:
		return errors.New("workload: base layers need a size")
	case o.Namespace == "" || strings.Trim(o.Namespace, "/") != o.Namespace:
		return fmt.Errorf("workload: bad namespace %q: use a repository path such as bench", o.Namespace)
	}
	return nil
}

// Blob is a config or a layer.
type Blob struct {
	Digest    digest.Digest
	Size      int64
	MediaType string
	data      []byte // configs and small static layers
	seed      uint64 // generated layers: seed and uncompressed size
	raw       int64
	diffID    digest.Digest
}

// Open returns the blob's content.
func (b *Blob) Open() io.ReadCloser {
	if b.data != nil {
		return io.NopCloser(bytes.NewReader(b.data))
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeLayer(pw, b.seed, b.raw)) }()
	return pr
}

// writeLayer writes the gzip stream (stored blocks) of n pseudo-random bytes.
func writeLayer(w io.Writer, seed uint64, n int64) error {
	zw, err := gzip.NewWriterLevel(w, gzip.NoCompression)
	if err != nil {
		return err
	}
	if err := writeRaw(zw, seed, n); err != nil {
		return err
	}
	return zw.Close()
}

func writeRaw(w io.Writer, seed uint64, n int64) error {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buf := make([]byte, 64<<10)
	for n > 0 {
		for i := 0; i < len(buf); i += 8 {
			v := r.Uint64()
			buf[i], buf[i+1], buf[i+2], buf[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			buf[i+4], buf[i+5], buf[i+6], buf[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
		}
		k := int64(len(buf))
		if n < k {
			k = n
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// Manifest is an image manifest or an index.
type Manifest struct {
	Digest    digest.Digest
	MediaType string
	Raw       []byte
	// Platform of an image inside an index ("linux/arm64"), else empty.
	Platform string
	// Config and Layers of an image manifest.
	Config *Blob
	Layers []*Blob
	// Children of an index.
	Children []*Manifest
}

// Blobs returns the config and layers of an image, or of every child of an index.
func (m *Manifest) Blobs() []*Blob {
	if len(m.Children) == 0 {
		return append([]*Blob{m.Config}, m.Layers...)
	}
	var out []*Blob
	for _, c := range m.Children {
		out = append(out, c.Blobs()...)
	}
	return out
}

// Tag is one tagged manifest of the workload.
type Tag struct {
	Repo     string // repository path, e.g. "bench/app-03"
	Tag      string
	Manifest *Manifest
}

// Ref returns the tag's reference in registry ("127.0.0.1:5000/bench/app-03:v1.7").
func (t Tag) Ref(registry string) string { return registry + "/" + t.Repo + ":" + t.Tag }

// Pinned returns the reference of the tag's manifest by digest in registry
// ("127.0.0.1:5000/bench/app-03@sha256:…").
func (t Tag) Pinned(registry string) string {
	return registry + "/" + t.Repo + "@" + t.Manifest.Digest.String()
}

// Workload is a generated set of tagged images.
type Workload struct {
	Options Options
	Tags    []Tag
	// Catalog is the (first) catalog image's tag, Catalogs every catalog
	// image's (set by AddCatalogs).
	Catalog  *Tag
	Catalogs []*Tag
	blobs    map[digest.Digest]*Blob
}

// Blobs returns the unique blobs, sorted by digest.
func (w *Workload) Blobs() []*Blob {
	out := make([]*Blob, 0, len(w.blobs))
	for _, b := range w.blobs {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Digest < out[j].Digest })
	return out
}

// Manifests returns every unique manifest (children before their index).
func (w *Workload) Manifests() []*Manifest {
	seen := map[digest.Digest]bool{}
	var out []*Manifest
	var add func(m *Manifest)
	add = func(m *Manifest) {
		for _, c := range m.Children {
			add(c)
		}
		if !seen[m.Digest] {
			seen[m.Digest] = true
			out = append(out, m)
		}
	}
	for _, t := range w.Tags {
		add(t.Manifest)
	}
	return out
}

// Stats sums up a workload.
type Stats struct {
	Tags, Repos, Indexes, Manifests, Blobs int
	// BlobBytes is the total size of the unique blobs; ManifestBytes that of the
	// unique manifests.
	BlobBytes, ManifestBytes int64
}

// Stats returns the workload's counts and sizes.
func (w *Workload) Stats() Stats {
	s := Stats{Tags: len(w.Tags), Blobs: len(w.blobs)}
	repos := map[string]bool{}
	for _, t := range w.Tags {
		repos[t.Repo] = true
		if len(t.Manifest.Children) > 0 {
			s.Indexes++
		}
	}
	s.Repos = len(repos)
	for _, b := range w.blobs {
		s.BlobBytes += b.Size
	}
	for _, m := range w.Manifests() {
		s.Manifests++
		s.ManifestBytes += int64(len(m.Raw))
	}
	return s
}

// Repos returns the repository paths, sorted.
func (w *Workload) Repos() []string {
	set := map[string]bool{}
	for _, t := range w.Tags {
		set[t.Repo] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// New generates a workload. Computing the digests streams every layer once
// (in parallel): about a second per gigabyte and core.
func New(o Options) (*Workload, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	w := &Workload{Options: o, blobs: map[digest.Digest]*Blob{}}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))

	// Layers first, without digests; then digests in parallel.
	bases := make([]*Blob, o.BaseLayers)
	var gen []*Blob
	for i := range bases {
		bases[i] = &Blob{seed: o.Seed<<32 ^ 0xba5e0000 + uint64(i), raw: o.BaseLayerSize}
		gen = append(gen, bases[i])
	}
	perImage := o.Images + 2*o.Indexes
	per := int64(0)
	if perImage > 0 {
		per = o.UniqueBytes / int64(perImage)
	}
	type imgPlan struct {
		base   *Blob
		layers []*Blob
	}
	plans := make([]imgPlan, perImage)
	for i := range plans {
		if len(bases) > 0 {
			plans[i].base = bases[i%len(bases)]
		}
		// Varied sizes: weights in [0.1, 2), normalised to per.
		ws := make([]float64, o.UniqueLayers)
		sum := 0.0
		for k := range ws {
			ws[k] = 0.1 + 1.9*rng.Float64()*rng.Float64()
			sum += ws[k]
		}
		for k := range ws {
			size := int64(float64(per) * ws[k] / sum)
			if size < 1 {
				size = 1
			}
			l := &Blob{seed: o.Seed<<40 ^ uint64(i)<<8 ^ uint64(k) ^ 0x1a7e0000000, raw: size}
			plans[i].layers = append(plans[i].layers, l)
			gen = append(gen, l)
		}
	}
	if err := digestLayers(gen); err != nil {
		return nil, err
	}

	build := func(idx int, platform string, oci bool) (*Manifest, error) {
		p := plans[idx]
		var layers []*Blob
		if p.base != nil {
			layers = append(layers, p.base)
		}
		layers = append(layers, p.layers...)
		lmt, cmt, mmt := MediaDockerLayer, MediaDockerConfig, MediaDockerManifest
		if oci {
			lmt, cmt, mmt = MediaOCILayer, MediaOCIConfig, MediaOCIManifest
		}
		arch := "amd64"
		if platform != "" {
			arch = strings.TrimPrefix(platform, "linux/")
		}
		return w.image(layers, lmt, cmt, mmt, arch, map[string]string{"airlock.bench/image": fmt.Sprint(idx)}, platform)
	}

	repo := func(i int) string {
		if o.Namespaces > 0 {
			r := i % o.Repos
			return fmt.Sprintf("%s/vendor-%02d/app-%04d", o.Namespace, r%o.Namespaces, r)
		}
		return fmt.Sprintf("%s/app-%02d", o.Namespace, i%o.Repos)
	}
	for i := 0; i < o.Images; i++ {
		m, err := build(i, "", i%2 == 1)
		if err != nil {
			return nil, err
		}
		w.Tags = append(w.Tags, Tag{Repo: repo(i), Tag: fmt.Sprintf("v1.%d", i), Manifest: m})
	}
	for j := 0; j < o.Indexes; j++ {
		oci := j%2 == 1
		var kids []*Manifest
		for p, pl := range []string{"linux/amd64", "linux/arm64"} {
			m, err := build(o.Images+2*j+p, pl, oci)
			if err != nil {
				return nil, err
			}
			kids = append(kids, m)
		}
		m, err := index(kids, oci)
		if err != nil {
			return nil, err
		}
		w.Tags = append(w.Tags, Tag{Repo: repo(o.Images + j), Tag: fmt.Sprintf("multi-%d", j), Manifest: m})
	}
	return w, nil
}

// digestLayers computes the digest, size and diff ID of generated layers.
func digestLayers(ls []*Blob) error {
	work := make(chan *Blob)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				h := sha256.New()
				cw := &countWriter{w: h}
				if err := writeLayer(cw, b.seed, b.raw); err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				b.Digest = digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil))
				b.Size = cw.n
				hd := sha256.New()
				_ = writeRaw(hd, b.seed, b.raw)
				b.diffID = digest.NewDigestFromBytes(digest.SHA256, hd.Sum(nil))
			}
		}()
	}
	for _, b := range ls {
		work <- b
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
