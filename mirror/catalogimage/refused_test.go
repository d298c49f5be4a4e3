package catalogimage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

// A catalog image refused for what it holds (here a file over the extraction
// limit) leaves nothing in the cache: neither its copy nor the partial
// extraction; fetching it again gives the same refusal.
func TestRefusedCatalogLeavesNothing(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.Host() + "/ns/catalog:v1"
	push(t, ref, testCatalogImage(t, types.OCIManifestSchema1, "amd64"))
	work := t.TempDir()
	for range 2 {
		_, err := Fetch(context.Background(), ref, work, FetchOptions{Logger: discardLogger(), Limits: ExtractLimits{MaxFileBytes: 8}})
		if !errors.Is(err, ErrExtractLimit) {
			t.Fatalf("error = %v, want ErrExtractLimit", err)
		}
		ents, err := os.ReadDir(filepath.Join(work, "catalogs", catalogDirName(reg.Host()+"/ns/catalog")))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if len(ents) != 0 {
			t.Errorf("the cache keeps %d folder(s) of the refused catalog (%s)", len(ents), ents[0].Name())
		}
	}
}
