package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
)

// ListOperatorsOptions says what `airlock list operators` shows.
type ListOperatorsOptions struct {
	// Catalog is a catalog image reference, "oci://PATH", or a local file-based
	// catalog directory.
	Catalog string
	// Package, when set, lists the package's channels; with Channel, the
	// channel's bundles.
	Package string
	Channel string
	// WorkDir is where a fetched catalog is extracted and cached; empty means a
	// temporary folder removed before returning.
	WorkDir string
	// Fetch holds registry access options (see catalogimage.NewFetchOptions).
	Fetch catalogimage.FetchOptions
}

// OperatorList is a catalog summary with the digest the catalog resolved to ("" for
// a local directory).
type OperatorList struct {
	*fbc.Summary
	Digest digest.Digest
}

// ListOperators fetches (or opens) a catalog and summarises it: its packages
// with their default channel; with a package, its channels and their heads; with
// a channel too, the channel's bundles and versions.
func ListOperators(ctx context.Context, o ListOperatorsOptions) (*OperatorList, error) {
	if o.Channel != "" && o.Package == "" {
		return nil, fmt.Errorf("--channel needs --package")
	}
	out := &OperatorList{}
	dir, cleanup, local, err := legacy.LocalDir(ctx, o.Catalog, o.Fetch.Logger)
	if err != nil {
		return nil, err
	}
	if local && !location.IsLayout(o.Catalog) {
		defer cleanup()
	} else {
		work := o.WorkDir
		if work == "" {
			tmp, err := os.MkdirTemp("", "airlock-list-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(tmp)
			work = tmp
		}
		fc, err := catalogimage.Fetch(ctx, o.Catalog, work, o.Fetch)
		if err != nil {
			return nil, err
		}
		if dir, err = fbcDir(ctx, fc, o.Fetch.Logger); err != nil {
			return nil, err
		}
		out.Digest = fc.Digest
	}
	cat, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{ElideHeavy: true, Logger: o.Fetch.Logger})
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", o.Catalog, err)
	}
	s, err := fbc.Summarize(cat, o.Catalog, o.Package, o.Channel)
	if err != nil {
		return nil, err
	}
	out.Summary = s
	return out, nil
}

// WriteTable writes the summary as aligned columns.
func (l *OperatorList) WriteTable(w io.Writer) error { return l.Summary.WriteTable(w) }
