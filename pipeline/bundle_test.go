package pipeline_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
)

const (
	demoBundleDir = "../fbc/legacy/testdata/bundles/demo-operator.v0.4.0"
	demoManifests = "../fbc/legacy/testdata/manifests"
)

// pushBundle builds a bundle image (one layer holding dir's manifests/ and
// metadata/, the package label) and pushes it to ref.
func pushBundle(t *testing.T, ref, dir string, label bool) v1.Hash {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Name: rel + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	if label {
		cfg.Config.Labels = map[string]string{catalogimage.BundlePackageLabel: "demo-operator", "operators.operatorframework.io.bundle.channels.v1": "stable,fast"}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func plainFetch() catalogimage.FetchOptions { return catalogimage.NewFetchOptions("", false, nil, nil) }

// TestBundleImageRenderAndAdd: a bundle image in a real registry renders as
// opm render does (the reference as its image) and is added to a catalog
// converted from package manifests: recorded by digest, the channel's new head,
// the catalog valid and listed.
func TestBundleImageRenderAndAdd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := registrytest.Start(t)
	ref := reg.Host() + "/demo/demo-operator-bundle:v0.4.0"
	d := pushBundle(t, ref, demoBundleDir, true)

	var out bytes.Buffer
	if err := pipeline.Render(ctx, pipeline.RenderOptions{Sources: []string{ref}, Format: "json", Fetch: plainFetch()}, &out); err != nil {
		t.Fatal(err)
	}
	// The image renders as its unpacked folder does with the reference as its
	// image (conformance/bundle_test.go compares the folder's render with opm's).
	info, err := legacy.RenderBundleDir(demoBundleDir, ref)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := legacy.RenderBundle(ctx, info, &want, "json"); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() || !strings.Contains(out.String(), `"image": "`+ref+`"`) {
		t.Errorf("render of the bundle image:\n%.600s", out.String())
	}

	cat := filepath.Join(t.TempDir(), "catalog")
	if _, err := legacy.ConvertManifests(ctx, demoManifests, cat, legacy.ManifestOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.AddBundle(ctx, pipeline.AddBundleOptions{Bundle: ref, Catalog: cat, Add: legacy.AddOptions{Channel: "stable"}, Fetch: plainFetch()})
	if err != nil {
		t.Fatal(err)
	}
	pinned := reg.Host() + "/demo/demo-operator-bundle@" + d.String()
	if res.Image != pinned || res.Head != "demo-operator.v0.4.0" || res.Replaces != "demo-operator.v0.3.0" || res.NewChannel || res.NewPackage {
		t.Errorf("result = %+v (image %s)", res.AddResult, res.Image)
	}
	if _, err := validate.Dir(ctx, cat, nil); err != nil {
		t.Fatalf("catalog after add: %v", err)
	}
	l, err := pipeline.ListOperators(ctx, pipeline.ListOperatorsOptions{Catalog: cat, Package: "demo-operator"})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := l.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "stable   demo-operator.v0.4.0") {
		t.Errorf("list operators after add:\n%s", table.String())
	}
	// The same bundle again is refused, and the catalog is left as it was.
	before := readTree(t, cat)
	if _, err := pipeline.AddBundle(ctx, pipeline.AddBundleOptions{Bundle: ref, Catalog: cat, Add: legacy.AddOptions{Channel: "fast"}, Fetch: plainFetch()}); !errors.Is(err, legacy.ErrCannotAdd) {
		t.Fatalf("adding twice: %v", err)
	}
	if after := readTree(t, cat); after != before {
		t.Error("a refused add changed the catalog")
	}

	// An image without the bundle label is neither bundle nor catalog.
	other := reg.Host() + "/demo/not-a-bundle:v1"
	pushBundle(t, other, demoBundleDir, false)
	err = pipeline.Render(ctx, pipeline.RenderOptions{Sources: []string{other}, Format: "json", Fetch: plainFetch()}, &out)
	if !errors.Is(err, catalogimage.ErrNotFBCImage) || !strings.Contains(err.Error(), "neither a bundle image") {
		t.Errorf("render of a plain image: %v", err)
	}
}

// TestBundleFolderAddNewPackage: an unpacked bundle added to an empty catalog
// makes its package and channel; deterministic output (the same add twice
// from the same start gives the same bytes).
func TestBundleFolderAddNewPackage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var trees []string
	for range 2 {
		cat := t.TempDir()
		res, err := pipeline.AddBundle(ctx, pipeline.AddBundleOptions{Bundle: demoBundleDir, Catalog: cat, OutDir: filepath.Join(t.TempDir(), "out"), Add: legacy.AddOptions{Channel: "fast"}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NewPackage || !res.NewChannel || res.Replaces != "" || res.Head != "demo-operator.v0.4.0" || res.Image != "" {
			t.Errorf("result = %+v", res.AddResult)
		}
		trees = append(trees, readTree(t, res.Dir))
	}
	if trees[0] != trees[1] {
		t.Error("two identical adds wrote different catalogs")
	}
}

func readTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + "\n" + string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
