package catalogimage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCatalogLayerReused: a second rebuild of the same pruned catalog into the
// same layout reuses the compressed layer (found by the tar's digest); a
// changed catalog, or a memo whose blob is gone or has another size, builds
// the layer again.
func TestCatalogLayerReused(t *testing.T) {
	ctx := context.Background()
	src := "testdata/catalog/pruned"
	layout := t.TempDir()
	first, err := writeCatalogLayer(ctx, layout, src, "/configs", nil)
	if err != nil {
		t.Fatal(err)
	}
	st0, err := os.Stat(first.path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := writeCatalogLayer(ctx, layout, src, "/configs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *again != *first {
		t.Fatalf("second build %+v, first %+v", again, first)
	}
	if st1, _ := os.Stat(again.path); !os.SameFile(st0, st1) || !st1.ModTime().Equal(st0.ModTime()) {
		t.Error("the layer was written again instead of reused")
	}

	// Another catalog: another layer.
	other := t.TempDir()
	if err := os.CopyFS(other, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "extra.json"), []byte(`{"schema":"olm.package","name":"extra"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := writeCatalogLayer(ctx, layout, other, "/configs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if changed.digest == first.digest || changed.diffID == first.diffID {
		t.Fatal("a changed catalog reused the old layer")
	}

	// The blob the memo names was cut short: built again, same bytes as before.
	if err := os.Truncate(first.path, 10); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := writeCatalogLayer(ctx, layout, src, "/configs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *rebuilt != *first {
		t.Fatalf("rebuilt %+v, want %+v", rebuilt, first)
	}
	if st, _ := os.Stat(rebuilt.path); st.Size() != first.size {
		t.Errorf("blob is %d bytes, want %d", st.Size(), first.size)
	}
}
