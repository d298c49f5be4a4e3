package legacy

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/airlock-mirror/airlock/fbc"
)

// SQLiteCatalog is a SQLite index database opened to be filtered without being
// converted whole. Catalog reads what filtering needs (packages, channels and
// every bundle's properties and dependencies, not its manifests); Completer
// converts the bundles a filter keeps. Pruned this way, a database gives the
// catalog that ConvertSQLite then prune.Filter give, byte for byte, reading
// the manifests of the kept bundles only. The difference is on a damaged
// database: the manifests of bundles that are not kept are not read, so a
// fault in them is not reported.
type SQLiteCatalog struct {
	path string
	log  *slog.Logger
	ix   *index
	// listed are the bundles of each package (by package name).
	listed map[string]*listedBundles
}

// OpenSQLite opens the index database at dbPath (read-only; see ConvertSQLite)
// and reads its tables.
func OpenSQLite(ctx context.Context, dbPath string, opts SQLiteOptions) (s *SQLiteCatalog, err error) {
	defer recoverEngine(dbPath, &err)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ix, err := openIndex(ctx, dbPath)
	if err != nil {
		return nil, err
	}
	return &SQLiteCatalog{path: dbPath, log: log, ix: ix, listed: map[string]*listedBundles{}}, nil
}

// Close closes the database.
func (s *SQLiteCatalog) Close() { s.ix.close() }

// Catalog returns the catalog of the database with light bundles: each with
// its image and every property but its manifests (olm.bundle.object), and no
// related images (they come from its CSV). A bundle without an image keeps its
// manifests, which make it valid. Each package is checked as ConvertSQLite
// checks it, and refused alike.
func (s *SQLiteCatalog) Catalog(ctx context.Context) (c *fbc.Catalog, err error) {
	defer recoverEngine(s.path, &err)
	br, t := s.ix.br, s.ix.t
	g, err := readGraph(ctx, br, t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	c = &fbc.Catalog{}
	for _, n := range g.names {
		p, err := s.lightPackage(ctx, g.pkgs[n], g.rowsByPkg[n])
		if err != nil {
			return nil, fmt.Errorf("%s: package %q: %w", s.path, n, err)
		}
		c.Packages = append(c.Packages, p)
	}
	return c, nil
}

func (s *SQLiteCatalog) lightPackage(ctx context.Context, sk *skeleton, rows []*bundleRow) (*fbc.Package, error) {
	br, t := s.ix.br, s.ix.t
	p, lb, err := packageModel(ctx, br, t, sk, rows, s.log)
	if err != nil {
		return nil, err
	}
	s.listed[p.Name] = lb
	for _, n := range lb.names {
		var b *fbc.Bundle
		if lc := lb.light[n]; lc.path.String != "" {
			b, err = lightBundleOf(lb.row[n], lc, t)
		} else {
			b, err = s.fullBundle(ctx, p.Name, n)
			if err == nil {
				b = lightBundle(b)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("bundle %q: %w", n, err)
		}
		p.Bundles = append(p.Bundles, b)
	}
	if err := modelCheck(&fbc.Catalog{Packages: []*fbc.Package{p}}); err != nil {
		return nil, invalidPackage(err)
	}
	return p, nil
}

// fullBundle converts bundle name of package pkg, manifests included.
func (s *SQLiteCatalog) fullBundle(ctx context.Context, pkg, name string) (*fbc.Bundle, error) {
	lb := s.listed[pkg]
	if lb == nil || lb.row[name] == nil {
		return nil, fmt.Errorf("package %q holds no bundle %q in the database", pkg, name)
	}
	c, err := s.ix.br.read(ctx, name)
	if err != nil {
		return nil, err
	}
	return buildBundle(lb.row[name], c, s.ix.t, nil)
}

// Completer returns the prune.FilterOptions.Complete for the catalog of
// Catalog: it converts a kept bundle (so that a fault in its manifests is
// reported, as ConvertSQLite reports it) and returns it with its related images
// and without its manifests, which fbc.Write gets by converting it again
// (fbc.Bundle.WriteProperties): one bundle's manifests are in memory at a
// time. The database must stay open until the result is written.
func (s *SQLiteCatalog) Completer(ctx context.Context) func(*fbc.Bundle) (*fbc.Bundle, error) {
	return func(b *fbc.Bundle) (_ *fbc.Bundle, err error) {
		defer recoverEngine(s.path, &err)
		full, err := s.fullBundle(ctx, b.Package, b.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: package %q: bundle %q: %w", s.path, b.Package, b.Name, err)
		}
		if full.Image == "" {
			// Its manifests make it valid: keep them.
			return full, nil
		}
		nb := lightBundle(full)
		pkg, name := b.Package, b.Name
		nb.WriteProperties(func() (_ []fbc.Property, err error) {
			defer recoverEngine(s.path, &err)
			full, err := s.fullBundle(ctx, pkg, name)
			if err != nil {
				return nil, fmt.Errorf("%s: package %q: bundle %q: %w", s.path, pkg, name, err)
			}
			return full.Properties, nil
		})
		return nb, nil
	}
}
