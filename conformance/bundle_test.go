package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/image"
	"github.com/operator-framework/operator-registry/pkg/registry"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/legacy"
)

// opmRenderBundle is `opm render` of an unpacked bundle (imageRef "" for a
// folder, the reference for an image) in opm v1.73: registry.NewImageInput,
// then alpha/action's bundleToDeclcfg, whose helpers are unexported (and
// importing alpha/action drags in gpgme): ObjectsAndPropertiesFromBundle, the
// related images of getRelatedImages, bundle objects moved last, related
// images sorted.
func opmRenderBundle(dir, imageRef string) (*declcfg.DeclarativeConfig, error) {
	in, err := registry.NewImageInput(image.SimpleReference(imageRef), dir)
	if err != nil {
		return nil, err
	}
	b := in.Bundle
	_, props, err := registry.ObjectsAndPropertiesFromBundle(b)
	if err != nil {
		return nil, err
	}
	csv, err := b.ClusterServiceVersion()
	if err != nil {
		return nil, err
	}
	var spec map[string]*json.RawMessage
	if err := json.Unmarshal(csv.Spec, &spec); err != nil {
		return nil, err
	}
	var rel []declcfg.RelatedImage
	if raw, ok := spec["relatedImages"]; ok && raw != nil {
		if err := json.Unmarshal(*raw, &rel); err != nil {
			return nil, err
		}
	}
	have := map[string]bool{}
	for _, r := range rel {
		have[r.Image] = true
	}
	if b.BundleImage != "" && !have[b.BundleImage] {
		rel = append(rel, declcfg.RelatedImage{Image: b.BundleImage})
	}
	ops, err := csv.GetOperatorImages()
	if err != nil {
		return nil, err
	}
	for img := range ops {
		if !have[img] {
			rel = append(rel, declcfg.RelatedImage{Image: img})
		}
		have[img] = true
	}
	sort.Slice(rel, func(i, j int) bool { return rel[i].Image < rel[j].Image })
	var others, objs []property.Property
	for _, p := range props {
		if p.Type == property.TypeBundleObject || p.Type == property.TypeCSVMetadata {
			objs = append(objs, p)
		} else {
			others = append(others, p)
		}
	}
	return &declcfg.DeclarativeConfig{Bundles: []declcfg.Bundle{{
		Schema: "olm.bundle", Name: b.Name, Package: b.Package, Image: b.BundleImage,
		Properties: append(others, objs...), RelatedImages: rel,
	}}}, nil
}

// bundlesFromManifests builds an unpacked bundle from every version folder of
// the package-manifest folder root (its files under manifests/, an
// annotations.yaml naming the package and the channels of its package manifest).
func bundlesFromManifests(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	pkgs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if !p.IsDir() {
			continue
		}
		versions, err := os.ReadDir(filepath.Join(root, p.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range versions {
			if !v.IsDir() {
				continue
			}
			dir := filepath.Join(t.TempDir(), p.Name()+"-"+v.Name())
			if err := os.CopyFS(filepath.Join(dir, "manifests"), os.DirFS(filepath.Join(root, p.Name(), v.Name()))); err != nil {
				t.Fatal(err)
			}
			ann := "annotations:\n  operators.operatorframework.io.bundle.package.v1: " + p.Name() + "\n  operators.operatorframework.io.bundle.channels.v1: stable,beta\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n"
			if err := os.MkdirAll(filepath.Join(dir, "metadata"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte(ann), 0o644); err != nil {
				t.Fatal(err)
			}
			out = append(out, dir)
		}
	}
	return out
}

// TestBundleRenderAgreement: unpacked bundles (ours, and one built from every
// version folder of operator-registry's package-manifest test data) render to
// the same olm.bundle with airlock (legacy.RenderBundleDir) and with opm, as a
// folder (no image) and as an image (its reference as the image).
func TestBundleRenderAgreement(t *testing.T) {
	dirs := []string{filepath.Join("..", "fbc", "legacy", "testdata", "bundles", "demo-operator.v0.4.0")}
	root := opmModuleDir(t)
	for _, m := range []string{"manifests", "pkg/sqlite/testdata/loader_data", "pkg/registry/testdata/validPackages", "test/e2e/testdata/aqua"} {
		src := filepath.Join(root, filepath.FromSlash(m))
		if strings.HasSuffix(m, "aqua") {
			src = filepath.Dir(src)
			dirs = append(dirs, bundlesFromManifests(t, src)...)
			continue
		}
		dirs = append(dirs, bundlesFromManifests(t, src)...)
	}
	agreed := 0
	for _, dir := range dirs {
		for _, ref := range []string{"", "registry.example.com/bundles/" + filepath.Base(dir) + ":v1"} {
			want, opmErr := opmRenderBundle(dir, ref)
			got, ourErr := legacy.RenderBundleDir(dir, ref)
			if (opmErr != nil) != (ourErr != nil) {
				t.Errorf("%s (image %q): opm and airlock disagree:\nopm:     %v\nairlock: %v", dir, ref, opmErr, ourErr)
				continue
			}
			if opmErr != nil {
				t.Logf("%s: both refuse: opm: %v; airlock: %v", filepath.Base(dir), opmErr, ourErr)
				continue
			}
			cat := &fbc.Catalog{Packages: []*fbc.Package{{Name: got.Bundle.Package, Bundles: []*fbc.Bundle{got.Bundle}}}}
			if d := canonOpm(want).diff(canonOurs(cat), 20); d != "" {
				t.Errorf("%s (image %q): opm (first) and airlock (second) render differently:\n%s", dir, ref, d)
				continue
			}
			agreed++
		}
	}
	t.Logf("%d bundle renders agree", agreed)
	if agreed == 0 {
		t.Fatal("nothing compared")
	}
}
