package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/pipeline"
)

// pruneTestdata holds prune's filter test catalogs.
const pruneTestdata = "../prune/testdata/filter"

// TestPruneDir runs what airlock catalog prune does: entry selection by oci://
// path, load, filter, write; then a second run into the same directory fails.
func TestPruneDir(t *testing.T) {
	src, err := filepath.Abs(filepath.Join(pruneTestdata, "_catalogs", "sample"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "isc.yaml")
	cfg := `apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: registry.example.com/other/catalog:v1
  - catalog: oci://` + src + `
    packages:
    - name: vault
`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	res, err := pipeline.PruneDir(context.Background(), pipeline.PruneOptions{ConfigPath: cfgPath, Source: src, OutDir: out, Format: fbc.FormatYAML})
	if err != nil {
		t.Fatal(err)
	}
	if res.Operator.Catalog != "oci://"+src {
		t.Errorf("used entry %q", res.Operator.Catalog)
	}
	if p, _, b := res.Explanation.Counts(); p != 4 || b != 8 {
		t.Errorf("kept %d packages %d bundles, want 4 and 8", p, b)
	}
	if _, err := os.Stat(filepath.Join(out, "vault", "catalog.yaml")); err != nil {
		t.Errorf("no YAML output: %v", err)
	}
	if _, err := pipeline.PruneDir(context.Background(), pipeline.PruneOptions{ConfigPath: cfgPath, Source: src, OutDir: out}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("second run into the same directory: %v", err)
	}
	// Another directory matches no entry and there are two: error listing them.
	_, err = pipeline.PruneDir(context.Background(), pipeline.PruneOptions{ConfigPath: cfgPath, Source: filepath.Join(pruneTestdata, "_catalogs", "ocmirror-extra-blobs")})
	if err == nil || !strings.Contains(err.Error(), "registry.example.com/other/catalog:v1, oci://"+src) {
		t.Errorf("unmatched source: %v", err)
	}
}
