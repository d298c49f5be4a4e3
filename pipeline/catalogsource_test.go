package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/prune/graph"
)

// catalog graph draws a catalog image (fetched from a real registry) exactly
// as the folder it was built from; a path that does not exist is reported as
// a path, not read as an image reference.
func TestGraphOfCatalogImage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := registrytest.Start(t)
	res, err := seed.Seed(ctx, seed.Options{Registry: reg.Host(), CatalogDir: filepath.Join("..", "testdata", "demo", "catalog"),
		CatalogRepo: "demo/index", Insecure: true, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: "+res.Catalog+"\n    packages:\n    - name: demo-operator\n      minVersion: 1.1.0\n")
	fetch := catalogimage.NewFetchOptions("", false, nil, nil)
	draw := func(src string) string {
		t.Helper()
		var out bytes.Buffer
		opts := graph.DrawOptions{Dir: src, Package: "demo-operator", Format: graph.FormatDOT}
		if err := pipeline.GraphDir(ctx, cfg, opts, fetch, "", &out); err != nil {
			t.Fatalf("graph of %s: %v", src, err)
		}
		return out.String()
	}
	fromDir, fromImage := draw(res.CatalogDir), draw(res.Catalog)
	if fromImage != fromDir {
		t.Errorf("the image draws differently from its folder:\nimage:\n%s\nfolder:\n%s", fromImage, fromDir)
	}
	if !strings.Contains(fromImage, "digraph") {
		t.Errorf("not DOT: %s", fromImage)
	}
	err = pipeline.GraphDir(ctx, "", graph.DrawOptions{Dir: "./no-such-catalog", Package: "p"}, fetch, "", &bytes.Buffer{})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "./no-such-catalog") {
		t.Errorf("a missing folder: %v", err)
	}
}
