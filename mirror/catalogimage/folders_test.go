package catalogimage

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlock-mirror/airlock/mirror/registry"
)

// FetchFolders extracts only the folders asked for, from a registry image,
// with upper layers winning, and a second call reads its earlier extraction.
func TestFetchFolders(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	img, err := mutate.AppendLayers(empty.Image,
		tarLayer(t, types.OCILayer,
			tarEntry{name: "release-manifests/", typ: tar.TypeDir},
			tarEntry{name: "release-manifests/image-references", body: "old"},
			tarEntry{name: "release-manifests/gone", body: "deleted above"},
			tarEntry{name: "usr/bin/cluster-version-operator", body: "binary"},
		),
		tarLayer(t, types.OCILayer,
			tarEntry{name: "release-manifests/image-references", body: "new"},
			tarEntry{name: "release-manifests/.wh.gone"},
			tarEntry{name: "release-manifests/../../escape", body: "x"},
		),
	)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Host() + "/ocp/release:4.1.0-x86_64"
	push(t, ref, img)
	o := FetchOptions{Registry: registry.New(registry.Options{}), Logger: discardLogger()}
	work := t.TempDir()
	_, err = FetchFolders(ctx, ref, work, "release", []string{"/release-manifests"}, o, nil)
	if !errors.Is(err, ErrUnsafeLayer) {
		t.Fatalf("a layer escaping the folder: %v, want ErrUnsafeLayer", err)
	}

	img, err = mutate.AppendLayers(empty.Image,
		tarLayer(t, types.OCILayer, tarEntry{name: "release-manifests/image-references", body: "old"}, tarEntry{name: "release-manifests/gone", body: "x"}, tarEntry{name: "usr/bin/cvo", body: "binary"}),
		tarLayer(t, types.OCILayer, tarEntry{name: "release-manifests/image-references", body: "new"}, tarEntry{name: "release-manifests/.wh.gone"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	push(t, ref, img)
	var checked *v1.ConfigFile
	ff, err := FetchFolders(ctx, ref, work, "release", []string{"release-manifests"}, o, func(c *v1.ConfigFile) error { checked = c; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if checked == nil || ff.Config == nil {
		t.Error("the check was not given the config")
	}
	if d, _ := img.Digest(); ff.Digest.String() != d.String() {
		t.Errorf("digest %s, want %s", ff.Digest, d)
	}
	var files []string
	filepath.WalkDir(ff.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(ff.Dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if strings.Join(files, ",") != "release-manifests/image-references" {
		t.Errorf("extracted %v, want release-manifests/image-references only", files)
	}
	if b, _ := os.ReadFile(filepath.Join(ff.Dir, "release-manifests", "image-references")); string(b) != "new" {
		t.Errorf("image-references = %q, want the upper layer's", b)
	}
	again, err := FetchFolders(ctx, ref, work, "release", []string{"release-manifests"}, o, nil)
	if err != nil || !again.Cached || again.Dir != ff.Dir {
		t.Errorf("second fetch: %+v, %v, want the cached extraction", again, err)
	}

	if _, err := FetchFolders(ctx, ref, t.TempDir(), "release", []string{"/configs"}, o, nil); !errors.Is(err, ErrNoFolder) || !strings.Contains(err.Error(), "no layer holds files under /configs") {
		t.Errorf("a folder the image lacks: %v", err)
	}
	refuse := errors.New("not a payload")
	if _, err := FetchFolders(ctx, ref, t.TempDir(), "release", []string{"/release-manifests"}, o, func(*v1.ConfigFile) error { return refuse }); !errors.Is(err, refuse) {
		t.Errorf("a check that refuses: %v", err)
	}
	if _, err := FetchFolders(ctx, ref, t.TempDir(), "release", []string{"/"}, o, nil); err == nil {
		t.Error("the whole image was extracted")
	}
}
