package legacy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/airlock-mirror/airlock/prune"
)

// LocalDir returns the file-based catalog folder of a local catalog argument:
// a folder as it is; a SQLite index database converted (ConvertSQLite) into a
// temporary folder, which cleanup removes. ok is false, with no error, when src
// is neither (a registry reference, say).
func LocalDir(ctx context.Context, src string, log *slog.Logger) (dir string, cleanup func(), ok bool, err error) {
	st, err := os.Stat(src)
	switch {
	case err != nil:
		return "", nil, false, nil
	case st.IsDir():
		return src, func() {}, true, nil
	case !st.Mode().IsRegular() || !IsSQLite(src):
		return "", nil, false, nil
	}
	tmp, err := os.MkdirTemp("", "airlock-sqlite-")
	if err != nil {
		return "", nil, true, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	dir = filepath.Join(tmp, "configs")
	if _, err := ConvertSQLite(ctx, src, dir, SQLiteOptions{Logger: log}); err != nil {
		cleanup()
		return "", nil, true, err
	}
	return dir, cleanup, true, nil
}

// RenderLocal prints the catalog at src (a file-based catalog folder or a SQLite
// index database) as one stream of documents, as prune.RenderDir does.
func RenderLocal(ctx context.Context, src string, w io.Writer, format string, log *slog.Logger) error {
	dir, cleanup, ok, err := LocalDir(ctx, src, log)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: not a file-based catalog folder or a SQLite index database", src)
	}
	defer cleanup()
	return prune.RenderDir(ctx, dir, w, format, log)
}

// ValidateLocal is prune.ValidateDir of a file-based catalog folder or of a
// SQLite index database (converted first).
func ValidateLocal(ctx context.Context, src string, log *slog.Logger) (prune.CatalogCounts, error) {
	dir, cleanup, ok, err := LocalDir(ctx, src, log)
	if err != nil {
		return prune.CatalogCounts{}, err
	}
	if !ok {
		// Not ours: let ValidateDir report the problem with the folder.
		return prune.ValidateDir(ctx, src, log)
	}
	defer cleanup()
	return prune.ValidateDir(ctx, dir, log)
}
