package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
)

// CatalogDir makes a file-based catalog folder of src, whatever a site has: a
// file-based catalog folder (returned as is), a SQLite index database or a
// package-manifest folder (converted), or a catalog image — a registry
// reference or oci://PATH — fetched through mirror's one fetch path into
// workDir (kept there for the next run; a temporary folder when workDir is
// empty) and extracted, its database converted. cleanup removes what only
// this call needed.
func CatalogDir(ctx context.Context, src, workDir string, fetch catalogimage.FetchOptions) (dir string, cleanup func(), err error) {
	log := fetch.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, cleanup, local, err := legacy.LocalDir(ctx, src, log)
	if local || err != nil {
		return dir, cleanup, err
	}
	if strings.HasPrefix(src, "/") || strings.HasPrefix(src, ".") {
		// Meant as a path, not an image reference.
		_, err := os.Stat(src)
		return "", nil, fmt.Errorf("catalog %s: %w (give a file-based catalog folder, an index database, a package-manifest folder or a catalog image reference)", src, err)
	}
	cleanup = func() {}
	if workDir == "" {
		tmp, err := os.MkdirTemp("", "airlock-catalog-")
		if err != nil {
			return "", nil, err
		}
		workDir, cleanup = tmp, func() { os.RemoveAll(tmp) }
	}
	fc, err := catalogimage.Fetch(ctx, src, workDir, fetch)
	if err == nil {
		dir, err = fbcDir(ctx, fc, log)
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}
