package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

const (
	mtManifest = "application/vnd.oci.image.manifest.v1+json"
	mtIndex    = "application/vnd.oci.image.index.v1+json"
	mtLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
	mtConfig   = "application/vnd.oci.image.config.v1+json"
)

// testImage is an image held in memory: its blobs (config, layers), optional
// child manifests (for an index) and its top manifest.
type testImage struct {
	repo, tag string
	blobs     [][]byte
	children  []endpoint.Manifest
	top       endpoint.Manifest
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

func descOf(mt string, b []byte) map[string]any {
	return map[string]any{"mediaType": mt, "digest": digest.FromBytes(b).String(), "size": len(b)}
}

func manifestOf(config []byte, layers [][]byte) endpoint.Manifest {
	ls := []any{}
	for _, l := range layers {
		ls = append(ls, descOf(mtLayer, l))
	}
	raw, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtManifest, "config": descOf(mtConfig, config), "layers": ls})
	return endpoint.Manifest{MediaType: mtManifest, Digest: digest.FromBytes(raw), Raw: raw}
}

// makeImage builds a single-platform image from layers plus a random config.
func makeImage(rng *rand.Rand, repo, tag string, layers ...[]byte) testImage {
	config := []byte(fmt.Sprintf(`{"architecture":"amd64","os":"linux","n":%d}`, rng.Int64()))
	return testImage{repo: repo, tag: tag, blobs: append([][]byte{config}, layers...), top: manifestOf(config, layers)}
}

// makeIndex builds a two-platform image index.
func makeIndex(rng *rand.Rand, repo, tag string, shared []byte) testImage {
	img := testImage{repo: repo, tag: tag}
	var ms []any
	for _, arch := range []string{"amd64", "arm64"} {
		config := []byte(fmt.Sprintf(`{"architecture":%q,"os":"linux","n":%d}`, arch, rng.Int64()))
		layer := randBytes(rng, 3000+rng.IntN(5000))
		img.blobs = append(img.blobs, config, layer)
		m := manifestOf(config, [][]byte{shared, layer})
		img.children = append(img.children, m)
		d := descOf(mtManifest, m.Raw)
		d["platform"] = map[string]string{"os": "linux", "architecture": arch}
		ms = append(ms, d)
	}
	img.blobs = append(img.blobs, shared)
	raw, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtIndex, "manifests": ms})
	img.top = endpoint.Manifest{MediaType: mtIndex, Digest: digest.FromBytes(raw), Raw: raw}
	return img
}

// testSet is a deterministic set of images sharing some layers.
func testSet(seed uint64) []testImage {
	rng := rand.New(rand.NewPCG(seed, 7))
	base := randBytes(rng, 9000)
	var imgs []testImage
	for i := range 4 {
		imgs = append(imgs, makeImage(rng, fmt.Sprintf("ns/app%d", i), "v1", base, randBytes(rng, 2000+rng.IntN(9000)), randBytes(rng, 100+rng.IntN(900))))
	}
	imgs = append(imgs, makeIndex(rng, "ns/multi", "latest", base))
	return imgs
}

// push copies img into dst the way the copy engine does: blobs first (skipping
// those that exist), then child manifests by digest, then the top manifest.
func push(t testing.TB, ctx context.Context, dst endpoint.Destination, img testImage) {
	t.Helper()
	for _, b := range img.blobs {
		d := endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
		ok, err := dst.BlobExists(ctx, img.repo, d)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			continue
		}
		if err := dst.PutBlob(ctx, img.repo, d, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range img.children {
		if err := dst.PutManifest(ctx, img.repo, c.Digest.String(), c); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.PutManifest(ctx, img.repo, img.tag, img.top); err != nil {
		t.Fatal(err)
	}
}

func metaFor(imgs []testImage) Meta {
	m := Meta{Config: json.RawMessage(`{"kind": "ImageSetConfiguration"}`)}
	for _, img := range imgs {
		m.Images = append(m.Images, ImageRecord{Source: "quay.io/" + img.repo + ":" + img.tag, Digest: img.top.Digest,
			Destination: img.repo, Tags: []string{img.tag}, MediaType: img.top.MediaType})
	}
	m.Catalogs = []CatalogRecord{{Source: "registry.example/catalog:v1", Destination: "ns/catalog", Packages: []string{"b", "a"}}}
	return m
}

// writeArchive writes imgs into dir with the given options and returns the manifest.
func writeArchive(t testing.TB, dir string, opts WriterOptions, imgs []testImage) *Manifest {
	t.Helper()
	ctx := context.Background()
	w, err := NewWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		push(t, ctx, w, img)
	}
	m, err := w.Finish(ctx, metaFor(imgs))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// memDest is an in-memory registry-like Destination that verifies what it gets.
type memDest struct {
	mu        sync.Mutex
	blobs     map[string]map[digest.Digest][]byte // repo → blobs
	manifests map[string]endpoint.Manifest        // repo:ref → manifest
}

func newMemDest() *memDest {
	return &memDest{blobs: map[string]map[digest.Digest][]byte{}, manifests: map[string]endpoint.Manifest{}}
}

func (m *memDest) BlobExists(_ context.Context, repo string, d endpoint.Descriptor) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.blobs[repo][d.Digest]
	return ok, nil
}

func (m *memDest) MountBlob(_ context.Context, repo, from string, d endpoint.Descriptor) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[from][d.Digest]
	if ok {
		m.put(repo, d.Digest, b)
	}
	return ok, nil
}

func (m *memDest) put(repo string, d digest.Digest, b []byte) {
	if m.blobs[repo] == nil {
		m.blobs[repo] = map[digest.Digest][]byte{}
	}
	m.blobs[repo][d] = b
}

func (m *memDest) PutBlob(_ context.Context, repo string, d endpoint.Descriptor, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if digest.FromBytes(b) != d.Digest || int64(len(b)) != d.Size {
		return fmt.Errorf("memDest: blob %s mismatch", d.Digest)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.put(repo, d.Digest, b)
	return nil
}

func (m *memDest) ManifestExists(_ context.Context, repo, ref string, d digest.Digest) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mf, ok := m.manifests[repo+":"+ref]
	return ok && mf.Digest == d, nil
}

func (m *memDest) PutManifest(_ context.Context, repo, ref string, mf endpoint.Manifest) error {
	if digest.FromBytes(mf.Raw) != mf.Digest {
		return fmt.Errorf("memDest: manifest %s mismatch", mf.Digest)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.manifests[repo+":"+ref] = mf
	return nil
}

// pull copies everything the archive holds into dst (disk-to-mirror): for every
// tag, the blobs its manifest references, then the manifest.
func pull(ctx context.Context, r *Reader, dst endpoint.Destination) error {
	for _, t := range r.Tags() {
		mf, err := r.Manifest(ctx, t.Repo, t.Reference)
		if err != nil {
			return err
		}
		for _, ref := range manifestReferences(mf.Raw, nil) {
			if _, isManifest := r.manifest[ref]; isManifest {
				continue
			}
			d := endpoint.Descriptor{Digest: ref, Size: -1}
			if b, ok := r.blobs[ref]; ok {
				d.Size = b.Size
			} else if b, ok := r.relied[ref]; ok {
				d.Size = b.Size
			}
			if ok, err := dst.BlobExists(ctx, t.Repo, d); err != nil || ok {
				if err != nil {
					return err
				}
				continue
			}
			rc, err := r.Blob(ctx, t.Repo, d)
			if err != nil {
				return err
			}
			err = dst.PutBlob(ctx, t.Repo, d, rc)
			rc.Close()
			if err != nil {
				return err
			}
		}
		if err := dst.PutManifest(ctx, t.Repo, t.Reference, mf); err != nil {
			return err
		}
	}
	return nil
}

func chunkFiles(t testing.TB, dir string) []string {
	t.Helper()
	names, err := listChunks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range chunkFiles(t, from) {
		if err := os.WriteFile(filepath.Join(to, n), readFile(t, filepath.Join(from, n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func testRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 11)) }
