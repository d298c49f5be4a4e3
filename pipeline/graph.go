package pipeline

import (
	"context"
	"io"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/prune/graph"
)

// GraphDir is `airlock catalog graph`: it draws a package of the catalog
// opts.Dir — any source CatalogDir takes: a file-based catalog folder, a SQLite
// database, a package-manifest folder or a catalog image (fetched with fetch
// into workDir). With configPath, the configuration's entry for the catalog
// (SelectOperator, as catalog prune picks it) colours what it keeps, prunes
// and pulls in as dependencies.
func GraphDir(ctx context.Context, configPath string, opts graph.DrawOptions, fetch catalogimage.FetchOptions, workDir string, stdout io.Writer) error {
	if configPath != "" {
		cfg, err := imageset.LoadFile(configPath)
		if err != nil {
			return err
		}
		op, err := SelectOperator(cfg, opts.Dir)
		if err != nil {
			return err
		}
		opts.Operator, opts.ConfigSource = &op, cfg.Source
	}
	dir, cleanup, err := CatalogDir(ctx, opts.Dir, workDir, fetch)
	if err != nil {
		return err
	}
	defer cleanup()
	opts.Dir = dir
	return graph.Draw(ctx, opts, stdout)
}
