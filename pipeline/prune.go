package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/prune"
)

// PruneOptions are the inputs of PruneDir (airlock catalog prune).
type PruneOptions struct {
	// ConfigPath is the ImageSetConfiguration file.
	ConfigPath string
	// Source is the root directory of the file-based catalog to prune.
	Source string
	// Dir, when set, is the folder loaded instead of Source, which then only
	// selects the configuration's entry (a SQLite database converted to a
	// temporary folder, say).
	Dir string
	// OutDir receives the pruned catalog; it must be empty or absent. Empty: the
	// catalog is filtered and explained but not written.
	OutDir string
	// Format is fbc.FormatJSON (default) or fbc.FormatYAML.
	Format string
	// Logger receives progress and debug messages; nil discards them.
	Logger *slog.Logger
}

// PruneResult is what PruneDir did.
type PruneResult struct {
	// Operator is the mirror.operators entry that was applied.
	Operator    imageset.Operator
	Catalog     *fbc.Catalog
	Explanation *prune.Explanation
}

// PruneDir loads the configuration and the catalog directory, applies the
// operator entry that names the catalog (see SelectOperator), and writes the
// pruned catalog to opts.OutDir.
func PruneDir(ctx context.Context, opts PruneOptions) (*PruneResult, error) {
	dir := opts.Source
	if opts.Dir != "" {
		dir = opts.Dir
	}
	return pruneFrom(ctx, opts, func(log *slog.Logger) (*fbc.Catalog, prune.FilterOptions, error) {
		log.Debug("loading catalog", "dir", dir)
		c, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{ElideHeavy: true, Logger: log})
		return c, prune.FilterOptions{}, err
	})
}

// pruneFrom is PruneDir with the catalog from load, which also gives the filter
// options (a FilterOptions.Complete for a catalog loaded light); load runs
// once the configuration is read and the options checked.
func pruneFrom(ctx context.Context, opts PruneOptions, load func(*slog.Logger) (*fbc.Catalog, prune.FilterOptions, error)) (*PruneResult, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Source == "" {
		return nil, errors.New("no catalog directory given: pass the root directory of a file-based catalog")
	}
	if opts.OutDir != "" {
		if err := checkOutDir(opts.OutDir); err != nil {
			return nil, err
		}
		if err := fbc.CheckFormat(opts.Format); err != nil {
			return nil, err
		}
	}
	cfg, err := imageset.LoadFile(opts.ConfigPath)
	if err != nil {
		return nil, err
	}
	op, err := SelectOperator(cfg, opts.Source)
	if err != nil {
		return nil, err
	}
	c, fopts, err := load(log)
	if err != nil {
		return nil, err
	}
	fopts.Logger = log
	out, expl, err := prune.Filter(c, op, fopts)
	if err != nil {
		return nil, fmt.Errorf("%s: catalog %s: %w", cfg.Source, op.Catalog, err)
	}
	for _, w := range expl.Warnings {
		log.Warn(w)
	}
	if opts.OutDir != "" {
		if err := fbc.Write(ctx, out, opts.OutDir, fbc.WriteOptions{Format: opts.Format}); err != nil {
			return nil, err
		}
	}
	return &PruneResult{Operator: op, Catalog: out, Explanation: expl}, nil
}

// checkOutDir refuses an output directory that exists and is not an empty directory.
func checkOutDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("output directory %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("output directory %s is not empty: choose a new or empty directory", dir)
	}
	return nil
}

// SelectOperator returns the mirror.operators entry of cfg for the catalog
// directory source: the entry whose catalog is source itself or oci://<source>
// (relative or absolute), else the only entry, else an error listing the catalogs.
func SelectOperator(cfg *imageset.ImageSetConfiguration, source string) (imageset.Operator, error) {
	ops := cfg.Mirror.Operators
	if len(ops) == 0 {
		return imageset.Operator{}, fmt.Errorf("%s has no mirror.operators entry: add one whose catalog is oci://%s", cfg.Source, absOr(source))
	}
	want := absOr(source)
	for _, op := range ops {
		cat := op.Catalog
		if cat == source {
			return op, nil
		}
		if p, ok := location.CutLayout(cat); ok && absOr(p) == want {
			return op, nil
		}
	}
	if len(ops) == 1 {
		return ops[0], nil
	}
	cats := make([]string, len(ops))
	for i, op := range ops {
		cats[i] = op.Catalog
	}
	return imageset.Operator{}, fmt.Errorf("%s has %d mirror.operators entries and none is for %s: set one entry's catalog to oci://%s (catalogs: %s)", cfg.Source, len(ops), source, want, strings.Join(cats, ", "))
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}
