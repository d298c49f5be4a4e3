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
)

func extractFrom(t *testing.T, label string, layers ...[]tarEntry) (string, error) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "root")
	os.MkdirAll(dst, 0o755)
	var ls []v1.Layer
	for _, l := range layers {
		ls = append(ls, tarLayer(t, "application/vnd.oci.image.layer.v1.tar", l...))
	}
	return dst, extractLayers(context.Background(), ls, label, dst, ExtractLimits{}, discardLogger(), nil)
}

// An upper layer's file in a folder it has no entry for wins over a lower
// layer's file of the folder's name (layers without folder entries are common).
func TestExtractImplicitFolderHidesLowerFile(t *testing.T) {
	dst, err := extractFrom(t, "/configs",
		[]tarEntry{{name: "configs/", typ: tar.TypeDir}, {name: "configs/pkg", body: "old file"}},
		[]tarEntry{{name: "configs/pkg/catalog.json", body: `{"new":1}`}},
	)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dst, "pkg", "catalog.json"))
	if err != nil || string(b) != `{"new":1}` {
		t.Fatalf("pkg/catalog.json = %q, %v; the upper layer's file was lost", b, err)
	}
}

// Entries that would be written through a symlinked folder never land outside
// the catalog folder: either the layer is refused or every link stays inside.
func TestExtractNeverEscapesThroughSymlinks(t *testing.T) {
	cases := map[string][][]tarEntry{
		"same layer": {{
			{name: "configs/x1/x2/l.json", body: "{}"},
			{name: "configs/x1/x2", typ: tar.TypeSymlink, link: "../"},
			{name: "configs/x1/x2/l.json", typ: tar.TypeSymlink, link: "../../secret.json"},
			{name: "configs/x1/x2", body: ""},
		}},
		"link above, file below": {
			{{name: "configs/x", typ: tar.TypeSymlink, link: ".."}},
			{{name: "configs/x/l.json", body: "{}"}},
		},
		"file above, link below": {
			{{name: "configs/x/l.json", body: "{}"}},
			{{name: "configs/x", typ: tar.TypeSymlink, link: ".."}},
		},
	}
	for name, layers := range cases {
		t.Run(name, func(t *testing.T) {
			dst, err := extractFrom(t, "/configs", layers...)
			if errors.Is(err, ErrUnsafeLayer) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			root, _ := filepath.EvalSymlinks(dst)
			filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
				if err != nil || fi.Mode()&os.ModeSymlink == 0 {
					return nil
				}
				real, err := filepath.EvalSymlinks(p)
				if err == nil {
					if rel, _ := filepath.Rel(root, real); rel == ".." || strings.HasPrefix(rel, "../") {
						t.Errorf("%s resolves outside the catalog folder: %s", p, real)
					}
				}
				return nil
			})
		})
	}
}
