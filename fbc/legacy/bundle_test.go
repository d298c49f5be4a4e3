package legacy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

const demoBundle = "testdata/bundles/demo-operator.v0.4.0"

// TestRenderBundleDirGolden: the demo bundle renders to the golden olm.bundle
// (conformance/bundle_test.go checks it against opm's render).
func TestRenderBundleDirGolden(t *testing.T) {
	for _, tc := range []struct{ image, golden string }{
		{"", "bundle.golden.json"},
		{"registry.example.com/demo/bundle:v0.4.0", "bundle-image.golden.json"},
	} {
		info, err := RenderBundleDir(demoBundle, tc.image)
		if err != nil {
			t.Fatal(err)
		}
		if info.Replaces != "demo-operator.v0.3.0" || info.DefaultChannel != "stable" || len(info.Channels) != 2 || info.SkipRange != "<0.4.0" {
			t.Errorf("info = %+v", info)
		}
		var buf bytes.Buffer
		if err := RenderBundle(context.Background(), info, &buf, "json"); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", tc.golden), buf.Bytes())
	}
}

// TestRenderBundleDirErrors: what is not a bundle is refused with the reason.
func TestRenderBundleDirErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(dir string)
	}{
		{"no annotations", func(dir string) { os.Remove(filepath.Join(dir, "metadata", "annotations.yaml")) }},
		{"no manifests", func(dir string) { os.RemoveAll(filepath.Join(dir, "manifests")) }},
		{"no CSV", func(dir string) {
			os.Remove(filepath.Join(dir, "manifests", "demo-operator.clusterserviceversion.yaml"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(demoBundle)); err != nil {
				t.Fatal(err)
			}
			tc.edit(dir)
			if _, err := RenderBundleDir(dir, ""); !errors.Is(err, ErrNotBundle) {
				t.Fatalf("error = %v, want ErrNotBundle", err)
			}
		})
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(demoBundle)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "manifests", "widgets.crd.yaml"))
	if _, err := RenderBundleDir(dir, ""); err == nil {
		t.Fatal("a bundle without the CRD its CSV owns was rendered")
	}
}
