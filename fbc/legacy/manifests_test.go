package legacy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// demoManifests is a package-manifest folder: three versions, two channels, a
// skip, a skipRange, an owned and a required CRD, related images.
const demoManifests = "testdata/manifests"

// TestConvertManifestsGolden: the demo folder converts to the golden catalog
// (what opm v1.73 gives; conformance/manifests_test.go checks the same folder
// against opm itself).
func TestConvertManifestsGolden(t *testing.T) {
	out := filepath.Join(t.TempDir(), "fbc")
	st, err := ConvertManifests(context.Background(), demoManifests, out, ManifestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{Packages: 1, Channels: 2, Bundles: 3}) {
		t.Errorf("stats = %+v", st)
	}
	got, err := os.ReadFile(filepath.Join(out, "demo-operator", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "manifests.golden.json"), got)
	c, err := fbc.LoadDir(context.Background(), out, fbc.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Catalog(c); err != nil {
		t.Fatalf("converted catalog is invalid: %v", err)
	}
	p := c.Packages[0]
	if p.DefaultChannel != "stable" || p.Icon == nil {
		t.Errorf("package = %+v", p)
	}
	for _, b := range p.Bundles {
		if b.Image != "" {
			t.Errorf("bundle %s has image %q, want none (its manifests are inlined)", b.Name, b.Image)
		}
	}
}

// TestDetect: each local form is recognised.
func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want Kind
	}{
		{demoManifests, KindManifestDir},
		{filepath.Join(demoManifests, "demo-operator"), KindManifestDir},
		{demoCatalog, KindFBC},
		{demoDB(t), KindSQLite},
		{"quay.io/demo/index:v1", NotLocal},
		{filepath.Join(demoManifests, "demo-operator", "demo-operator.package.yaml"), NotLocal},
	} {
		if got := Detect(tc.src); got != tc.want {
			t.Errorf("Detect(%s) = %d, want %d", tc.src, got, tc.want)
		}
	}
}

// TestConvertManifestsProblems: what opm's loader reports is an error naming
// the file; Permissive converts the rest.
func TestConvertManifestsProblems(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(t *testing.T, dir string)
		want    string
		bundles int // with Permissive; -1: still refused
	}{
		{"replaces a missing CSV", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "demo-operator", "0.1.0"))
		}, "replaces demo-operator.v0.1.0, which is not a CSV of the folder", -1},
		{"channel head missing", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "demo-operator", "demo-operator.package.yaml"), "packageName: demo-operator\ndefaultChannel: stable\nchannels:\n- name: stable\n  currentCSV: demo-operator.v0.3.0\n- name: beta\n  currentCSV: demo-operator.v9.9.9\n")
		}, `channel "beta": its currentCSV "demo-operator.v9.9.9" is not a CSV of the folder`, -1},
		{"no default channel", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "demo-operator", "demo-operator.package.yaml"), "packageName: demo-operator\ndefaultChannel: beta\nchannels:\n- name: stable\n  currentCSV: demo-operator.v0.3.0\n- name: alpha\n  currentCSV: demo-operator.v0.2.0\n")
		}, "no default channel specified", -1},
		{"a file that is no YAML", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "notes.txt"), "just: some: text\n")
		}, "notes.txt: could not decode", 3},
		{"owned CRD missing", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "demo-operator", "0.3.0", "widgets.crd.yaml"))
		}, "owns CRD widgets.demo.example.com", 3},
		{"version not a string", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "demo-operator", "0.1.0", "demo-operator.v0.1.0.clusterserviceversion.yaml")
			b, _ := os.ReadFile(p)
			write(t, p, strings.Replace(string(b), "version: 0.1.0", "version: [0]", 1))
		}, "unable to obtain bundle version", -1},
		{"substitutesFor", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "demo-operator", "0.1.0", "demo-operator.v0.1.0.clusterserviceversion.yaml")
			b, _ := os.ReadFile(p)
			write(t, p, strings.Replace(string(b), "annotations:\n", "annotations:\n    olm.substitutesFor: x\n", 1))
		}, "olm.substitutesFor", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(demoManifests)); err != nil {
				t.Fatal(err)
			}
			tc.edit(t, dir)
			_, err := ConvertManifests(context.Background(), dir, filepath.Join(t.TempDir(), "out"), ManifestOptions{})
			var me *ManifestError
			if !errors.As(err, &me) || !errors.Is(err, ErrBadManifests) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want a ManifestError with %q", err, tc.want)
			}
			st, err := ConvertManifests(context.Background(), dir, filepath.Join(t.TempDir(), "out"), ManifestOptions{Permissive: true})
			if tc.bundles < 0 {
				if err == nil && st.Bundles > 0 {
					t.Logf("permissive: %+v", st)
				}
				return
			}
			if err != nil || st.Bundles != tc.bundles {
				t.Fatalf("permissive: %+v, %v; want %d bundles", st, err, tc.bundles)
			}
		})
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzFirstDocument: any file content decodes or fails cleanly, as a package
// manifest and as an object.
func FuzzFirstDocument(f *testing.F) {
	for _, p := range []string{
		"testdata/manifests/demo-operator/demo-operator.package.yaml",
		"testdata/manifests/demo-operator/0.3.0/demo-operator.v0.3.0.clusterserviceversion.yaml",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"kind": "ClusterServiceVersion", "metadata": {"name": 1e999}}`))
	f.Add([]byte("---\n--- x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if doc, err := firstDocument(p); err == nil {
			if o, err := decodeObject(doc); err == nil && o.kind == "ClusterServiceVersion" {
				if b, err := newBundleView([]*object{o}); err == nil {
					_, _ = b.images()
					_, _ = b.providedAPIs()
					_, _ = b.annotationProperties()
					_, _ = b.csv.skips()
				}
			}
		}
		_, _ = decodePackageManifest(p)
	})
}

// FuzzManifestAndBundleFiles: arbitrary content as a CSV and as a package
// manifest of the demo folder, and as a CSV and annotations of the demo bundle,
// converts, renders or fails cleanly.
func FuzzManifestAndBundleFiles(f *testing.F) {
	csv, err := os.ReadFile("testdata/manifests/demo-operator/0.3.0/demo-operator.v0.3.0.clusterserviceversion.yaml")
	if err != nil {
		f.Fatal(err)
	}
	pm, err := os.ReadFile("testdata/manifests/demo-operator/demo-operator.package.yaml")
	if err != nil {
		f.Fatal(err)
	}
	ann, err := os.ReadFile(filepath.Join(demoBundle, "metadata", "annotations.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(csv, pm, ann)
	f.Add([]byte("kind: ClusterServiceVersion\nmetadata: {name: x}\nspec: {version: 1}"), []byte("packageName: p\nchannels: [{name: a, currentCSV: x}]"), []byte("annotations: 1"))
	f.Fuzz(func(t *testing.T, csv, pm, ann []byte) {
		dir := t.TempDir()
		m := filepath.Join(dir, "manifests")
		if err := os.CopyFS(m, os.DirFS(demoManifests)); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(m, "demo-operator", "0.3.0", "demo-operator.v0.3.0.clusterserviceversion.yaml"), string(csv))
		write(t, filepath.Join(m, "demo-operator", "demo-operator.package.yaml"), string(pm))
		_, _ = ConvertManifests(context.Background(), m, filepath.Join(dir, "out"), ManifestOptions{Permissive: true})
		b := filepath.Join(dir, "bundle")
		if err := os.CopyFS(b, os.DirFS(demoBundle)); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(b, "manifests", "demo-operator.clusterserviceversion.yaml"), string(csv))
		write(t, filepath.Join(b, "metadata", "annotations.yaml"), string(ann))
		if info, err := RenderBundleDir(b, "example.com/b:1"); err == nil {
			_, _ = AddBundle(&fbc.Catalog{}, info, AddOptions{Channel: "stable"})
		}
	})
}
