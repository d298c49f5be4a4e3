package catalogimage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestRebuiltCatalogThroughLayoutSource serves a rebuilt catalog with
// layout.NewSource, as the copy engine will, and checks what it reads.
func TestRebuiltCatalogThroughLayoutSource(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	idx := testIndex(t, types.DockerManifestList)
	ref := reg.Host() + "/ns/cat:v2"
	pushIndex(t, ref, idx)
	fc, err := Fetch(ctx, ref, t.TempDir(), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: filepath.Join(t.TempDir(), "rebuilt")})
	if err != nil {
		t.Fatal(err)
	}
	src, err := layout.NewSource(r.LayoutDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Manifest(ctx, "any", r.Tag)
	if err != nil {
		t.Fatal(err)
	}
	if m.Digest != r.Digest || m.MediaType != string(types.DockerManifestList) {
		t.Fatalf("Manifest = %s %s, want %s", m.Digest, m.MediaType, r.Digest)
	}
	dst, err := layout.NewDestination(filepath.Join(t.TempDir(), "copy"))
	if err != nil {
		t.Fatal(err)
	}
	mirrortest.CopyImage(t, ctx, src, dst, r.Digest.String(), "v2")
	fb, err := Fetch(ctx, "oci://"+dst.Source().Dir()+":v2", t.TempDir(), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fb.Digest != r.Digest {
		t.Fatalf("copied catalog digest %s, want %s", fb.Digest, r.Digest)
	}
	if got := listFiles(t, fb.ConfigsDir); strings.Join(got, ",") != "foo/catalog.json" {
		t.Fatalf("copied catalog holds %v", got)
	}
}
