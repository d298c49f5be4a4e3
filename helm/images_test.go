package helm

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

func loadTestChart(t *testing.T, p string) *Chart {
	t.Helper()
	var c *Chart
	var err error
	if strings.HasSuffix(p, ".tgz") {
		var b []byte
		if b, err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
		c, err = LoadArchive(b)
	} else {
		c, err = LoadPath(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestImagesGolden renders every chart of the test data with its own values
// and lists the images found and where (testdata/images.golden).
func TestImagesGolden(t *testing.T) {
	charts, _ := filepath.Glob("testdata/oc-mirror/charts/*.tgz")
	charts = append(charts, "testdata/charts/workloads")
	paths := map[string][]string{
		"workloads":        {"{.spec.widgetImage}"},
		"test-mirror-helm": {"{.spec.template.spec.containers[*].env[*].value}"},
	}
	var b strings.Builder
	for _, p := range charts {
		c := loadTestChart(t, p)
		r, err := Render(c, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		found, err := Images(r, paths[c.Name()])
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b.WriteString(c.Name() + " " + c.Version() + "\n")
		for _, f := range found {
			b.WriteString("  " + f.Image + "\n")
			for _, w := range f.Where {
				b.WriteString("    " + w + "\n")
			}
		}
	}
	// Test pods of some charts have random name suffixes (randAlphaNum).
	stable := regexp.MustCompile(`-test-[a-z0-9]{5} `).ReplaceAllString(b.String(), "-test-XXXXX ")
	golden.Check(t, "testdata/images.golden", []byte(stable))
}

// TestImagesEveryWorkload: each workload kind, init and ephemeral
// containers, an environment value, an image path and both aliases of a
// sub-chart are found; configured values override the chart's.
func TestImagesEveryWorkload(t *testing.T) {
	c := loadTestChart(t, "testdata/charts/workloads")
	tests := []struct {
		name   string
		values map[string]any
		paths  []string
		want   []string
		absent []string
	}{
		{name: "defaults", paths: []string{"{.spec.widgetImage}"}, want: []string{
			"registry.example.com/app/agent:1.0", "registry.example.com/app/backup:1.0", "registry.example.com/app/cron:1.0",
			"registry.example.com/app/db:1.0", "registry.example.com/app/init:1.0", "registry.example.com/app/job:1.0",
			"registry.example.com/app/pod:1.0", "registry.example.com/app/rs:1.0", "registry.example.com/app/widget:1.0",
			"registry.example.com/sidecar/first:1.0", "registry.example.com/sidecar/second:1.0", "registry.example.com/tools/debug:1.0",
		}, absent: []string{"info", "registry.example.com/sidecar/default:0.1"}},
		{name: "values override, alias disabled", values: map[string]any{"tag": "2.0", "second": map[string]any{"enabled": false}},
			want:   []string{"registry.example.com/app/cron:2.0", "registry.example.com/sidecar/first:1.0"},
			absent: []string{"registry.example.com/sidecar/second:1.0", "registry.example.com/app/widget:2.0", "registry.example.com/app/cron:1.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Render(c, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			found, err := Images(r, tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, f := range found {
				got[f.Image] = true
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("missing %s in %v", w, found)
				}
			}
			for _, a := range tc.absent {
				if got[a] {
					t.Errorf("found %s, which the chart does not run", a)
				}
			}
		})
	}
}

// TestRenderRequiredNamesValue: a chart whose required value is missing
// fails with the value's message; setting it renders.
func TestRenderRequiredNamesValue(t *testing.T) {
	c := loadTestChart(t, "testdata/charts/required")
	_, err := Render(c, nil)
	if err == nil || !strings.Contains(err.Error(), "set image.repository to the image to run") || !strings.Contains(err.Error(), "values") {
		t.Fatalf("err = %v, want the required value's message", err)
	}
	r, err := Render(c, map[string]any{"image": map[string]any{"repository": "quay.io/x/app"}})
	if err != nil {
		t.Fatal(err)
	}
	found, _ := Images(r, nil)
	if len(found) != 1 || found[0].Image != "quay.io/x/app:1.0" {
		t.Fatalf("found %v", found)
	}
}

func TestImagesBadPath(t *testing.T) {
	if _, err := Images(&Rendered{}, []string{"{.spec[}"}); err == nil {
		t.Fatal("want an error for a bad JSONPath")
	}
}

func TestLooksLikeImage(t *testing.T) {
	for s, want := range map[string]bool{
		"quay.io/a/b:1": true, "localhost/x": true, "reg:5000/a@sha256:" + strings.Repeat("a", 64): true,
		"info": false, "true": false, "nginx:1.2": false, "http://x.io/a": false, "a b": false, "": false,
	} {
		if got := LooksLikeImage(s); got != want {
			t.Errorf("LooksLikeImage(%q) = %v", s, got)
		}
	}
}

func TestArtifactDeterministic(t *testing.T) {
	c := loadTestChart(t, "testdata/oc-mirror/charts/podinfo-5.0.0.tgz")
	d := t.TempDir()
	a1, err := WriteArtifact(c, filepath.Join(d, "a"))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := WriteArtifact(c, filepath.Join(d, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if a1.Digest != a2.Digest || a1.Tag != "5.0.0" {
		t.Fatalf("%+v %+v", a1, a2)
	}
	man, err := os.ReadFile(filepath.Join(d, "a", "blobs", "sha256", a1.Digest.Encoded()))
	if err != nil {
		t.Fatal(err)
	}
	ld, size, err := ChartLayer(man, "podinfo")
	if err != nil || ld.Encoded() != ArchiveDigest(c.Archive) || size != int64(len(c.Archive)) {
		t.Fatalf("ChartLayer = %s %d %v", ld, size, err)
	}
	if _, _, err := ChartLayer([]byte(`{"config":{"mediaType":"application/vnd.oci.image.config.v1+json"}}`), "x"); err == nil {
		t.Fatal("an image is not a chart")
	}
	if Tag("1.0.0+build.1") != "1.0.0_build.1" {
		t.Fatal(Tag("1.0.0+build.1"))
	}
	_ = errors.New
}
