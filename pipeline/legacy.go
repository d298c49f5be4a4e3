package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/prune"
	"github.com/airlock-mirror/airlock/workspace"
)

// fbcDir returns the folder of fc's file-based catalog. A SQLite-based catalog
// is converted first (legacy.ConvertSQLite) next to its extracted database; the
// conversion is kept for the next run of the same catalog digest. It sets
// fc.ConfigsDir.
func fbcDir(ctx context.Context, fc *catalogimage.Fetched, log *slog.Logger) (string, error) {
	if fc.DatabaseFile == "" {
		return fc.ConfigsDir, nil
	}
	base := filepath.Dir(filepath.Dir(fc.DatabaseFile))
	// A marker is written next to the converted catalog once the conversion
	// is complete.
	dir := filepath.Join(base, workspace.ConfigsDirName)
	marker := filepath.Join(base, workspace.ConvertedFile)
	if _, err := os.Stat(marker); err == nil {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			fc.ConfigsDir = dir
			return dir, nil
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("converting the SQLite catalog to a file-based catalog", "catalog", fc.Ref, "database", fc.Database)
	tmp, err := os.MkdirTemp(base, ".convert-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, workspace.ConfigsDirName)
	st, err := legacy.ConvertSQLite(ctx, fc.DatabaseFile, out, legacy.SQLiteOptions{Logger: log})
	if err != nil {
		return "", fmt.Errorf("catalog %s: converting its SQLite database %s: %w", fc.Ref, fc.Database, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(out, dir); err != nil {
		return "", err
	}
	if err := os.WriteFile(marker, fmt.Appendf(nil, "{\"packages\": %d, \"channels\": %d, \"bundles\": %d}\n", st.Packages, st.Channels, st.Bundles), 0o644); err != nil {
		return "", err
	}
	log.Info("SQLite catalog converted", "catalog", fc.Ref, "packages", st.Packages, "bundles", st.Bundles)
	fc.ConfigsDir = dir
	return dir, nil
}

// PruneLocal is PruneDir of a file-based catalog folder, a package-manifest
// folder (converted first) or a SQLite index database (opts.Source still
// selects the entry of the configuration). A database is not converted whole:
// its graph and light bundles are filtered (legacy.SQLiteCatalog), and only
// the bundles kept are converted, with the same result.
func PruneLocal(ctx context.Context, opts PruneOptions) (*PruneResult, error) {
	if legacy.Detect(opts.Source) == legacy.KindSQLite {
		return pruneSQLite(ctx, opts)
	}
	dir, cleanup, ok, err := legacy.LocalDir(ctx, opts.Source, opts.Logger)
	if err != nil {
		return nil, err
	}
	if ok {
		defer cleanup()
		opts.Dir = dir
	}
	return PruneDir(ctx, opts)
}

// pruneSQLite is PruneLocal of a SQLite index database.
func pruneSQLite(ctx context.Context, opts PruneOptions) (*PruneResult, error) {
	var db *legacy.SQLiteCatalog
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	return pruneFrom(ctx, opts, func(log *slog.Logger) (*fbc.Catalog, prune.FilterOptions, error) {
		var err error
		if db, err = legacy.OpenSQLite(ctx, opts.Source, legacy.SQLiteOptions{Logger: log}); err != nil {
			return nil, prune.FilterOptions{}, err
		}
		log.Debug("reading the catalog's graph from the database", "database", opts.Source)
		c, err := db.Catalog(ctx)
		return c, prune.FilterOptions{Complete: db.Completer(ctx)}, err
	})
}
