package legacy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

// Kind is the format of a local catalog argument.
type Kind int

// The local catalog formats.
const (
	NotLocal        Kind = iota // not a local catalog (a registry reference, say)
	KindFBC                     // a file-based catalog folder
	KindSQLite                  // a SQLite index database file
	KindManifestDir             // a package-manifest folder
	KindBundleDir               // an unpacked bundle (manifests/ and metadata/)
)

// Detect tells what the local catalog argument src is.
func Detect(src string) Kind {
	st, err := os.Stat(src)
	switch {
	case err != nil:
		return NotLocal
	case st.IsDir() && IsBundleDir(src):
		return KindBundleDir
	case st.IsDir() && IsManifestDir(src):
		return KindManifestDir
	case st.IsDir():
		return KindFBC
	case st.Mode().IsRegular() && IsSQLite(src):
		return KindSQLite
	}
	return NotLocal
}

// ConvertLocal converts a SQLite index database (ConvertSQLite) or a
// package-manifest folder (ConvertManifests) into the file-based catalog
// folder outDir.
func ConvertLocal(ctx context.Context, src, outDir string, log *slog.Logger, permissive bool) (Stats, error) {
	switch Detect(src) {
	case KindSQLite:
		return ConvertSQLite(ctx, src, outDir, SQLiteOptions{Logger: log})
	case KindManifestDir:
		return ConvertManifests(ctx, src, outDir, ManifestOptions{Logger: log, Permissive: permissive})
	}
	return Stats{}, fmt.Errorf("%s: not a SQLite index database or a package-manifest folder (a file-based catalog folder needs no conversion; a bundle is added to a catalog with `airlock catalog add`)", src)
}

// LocalDir returns the file-based catalog folder of a local catalog argument:
// a file-based catalog folder as it is; a SQLite index database or a
// package-manifest folder converted (ConvertLocal) into a temporary folder,
// which cleanup removes. ok is false, with no error, when src is none of them
// (a registry reference, say).
func LocalDir(ctx context.Context, src string, log *slog.Logger) (dir string, cleanup func(), ok bool, err error) {
	switch Detect(src) {
	case NotLocal:
		return "", nil, false, nil
	case KindFBC:
		return src, func() {}, true, nil
	}
	tmp, err := os.MkdirTemp("", "airlock-convert-")
	if err != nil {
		return "", nil, true, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	dir = filepath.Join(tmp, "configs")
	if _, err := ConvertLocal(ctx, src, dir, log, false); err != nil {
		cleanup()
		return "", nil, true, err
	}
	return dir, cleanup, true, nil
}

// RenderBundle prints the olm.bundle of info as `opm render` of a bundle does.
func RenderBundle(ctx context.Context, info *BundleInfo, w io.Writer, format string) error {
	cat := &fbc.Catalog{Packages: []*fbc.Package{{Name: info.Bundle.Package, Bundles: []*fbc.Bundle{info.Bundle}}}}
	return fbc.Render(ctx, cat, w, format)
}

// RenderLocal prints the catalog at src (a file-based catalog folder, a SQLite
// index database or a package-manifest folder) as one stream of documents, as fbc.RenderDir does.
func RenderLocal(ctx context.Context, src string, w io.Writer, format string, log *slog.Logger) error {
	if Detect(src) == KindBundleDir {
		info, err := RenderBundleDir(src, "")
		if err != nil {
			return err
		}
		return RenderBundle(ctx, info, w, format)
	}
	dir, cleanup, ok, err := LocalDir(ctx, src, log)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: not a file-based catalog folder, a package-manifest folder or a SQLite index database", src)
	}
	defer cleanup()
	return fbc.RenderDir(ctx, dir, w, format, log)
}

// ValidateLocal is validate.Dir of a file-based catalog folder, or of a
// SQLite index database or a package-manifest folder (converted first).
func ValidateLocal(ctx context.Context, src string, log *slog.Logger) (fbc.CatalogCounts, error) {
	dir, cleanup, ok, err := LocalDir(ctx, src, log)
	if err != nil {
		return fbc.CatalogCounts{}, err
	}
	if !ok {
		// Not ours: let validate.Dir report the problem with the folder.
		return validate.Dir(ctx, src, log)
	}
	defer cleanup()
	return validate.Dir(ctx, dir, log)
}
