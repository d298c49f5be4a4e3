package graph

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/prune"
)

// DrawOptions are the inputs of `airlock catalog graph`.
type DrawOptions struct {
	// Dir is the root of a file-based catalog.
	Dir string
	// Package and Channel say what to draw (Channel "" for every channel).
	Package, Channel string
	// Operator, when set, is the ImageSetConfiguration entry applied to the
	// catalog: what it keeps, prunes and pulls in is coloured. ConfigSource
	// names its file in errors.
	Operator     *imageset.Operator
	ConfigSource string
	// Output is the file to write ("" or "-": standard output); its extension
	// gives the format unless Format is set.
	Output string
	// Format is dot, mmd, svg or png ("" from Output, else dot).
	Format string
	// Collapse is the shortest run folded into one node (0: never fold).
	Collapse int
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
}

// Draw loads the catalog in opts.Dir, filters it with the configuration if one is
// given, and writes the picture of the package to opts.Output (or stdout).
func Draw(ctx context.Context, opts DrawOptions, stdout io.Writer) error {
	format := opts.Format
	toStdout := opts.Output == "" || opts.Output == "-"
	if format == "" {
		if toStdout {
			format = FormatDOT
		} else {
			f, err := FormatOf(opts.Output)
			if err != nil {
				return err
			}
			format = f
		}
	}
	p, err := Prepare(ctx, opts)
	if err != nil {
		return err
	}
	if toStdout {
		return p.Write(ctx, stdout, format)
	}
	if err := os.MkdirAll(filepath.Dir(opts.Output), 0o755); err != nil {
		return err
	}
	f, err := os.Create(opts.Output)
	if err != nil {
		return err
	}
	if err := p.Write(ctx, f, format); err != nil {
		f.Close()
		os.Remove(opts.Output)
		return err
	}
	return f.Close()
}

// Prepare loads the catalog in opts.Dir, filters it with the configuration if
// one is given, and builds the picture of the package (what Draw writes).
func Prepare(ctx context.Context, opts DrawOptions) (*Package, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("no catalog directory given: pass the root directory of a file-based catalog")
	}
	c, err := fbc.LoadDir(ctx, opts.Dir, fbc.LoadOptions{ElideHeavy: true, Logger: log})
	if err != nil {
		return nil, err
	}
	collapse := opts.Collapse
	if collapse == 0 {
		collapse = -1
	}
	gopts := Options{Package: opts.Package, Channel: opts.Channel, Collapse: collapse}
	if op := opts.Operator; op != nil {
		_, expl, err := prune.Filter(c, *op, prune.FilterOptions{Logger: log})
		if err != nil {
			return nil, fmt.Errorf("%s: catalog %s: %w", opts.ConfigSource, op.Catalog, err)
		}
		gopts.Explanation = expl
	}
	p, err := Build(c, gopts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Dir, err)
	}
	return p, nil
}
