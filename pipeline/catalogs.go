package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/prune"
	"github.com/airlock-mirror/airlock/report"
	"github.com/airlock-mirror/airlock/workspace"
)

// filterHash identifies what an operator entry selects (not where it goes), so a
// re-run with the same selection reuses the pruned catalog and its image.
func filterHash(op imageset.Operator) string {
	sel := op
	sel.TargetCatalog, sel.TargetTag, sel.TargetCatalogSourceTemplate = "", "", ""
	b, _ := json.Marshal(sel)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// catalogsLater fetches, prunes and rebuilds every operator catalog of the
// configuration, the last rebuild still running (a background): the images
// the catalogs name are known, their Rebuilt is not (planning can start);
// wait, which must be called (more than once is fine), waits for the rebuild
// and sets Rebuilt in the returned slice; wait(true) stops the rebuild first
// (the run failed). A catalog's rebuild finishes before the next catalog is
// fetched.
func (r *run) catalogsLater(ctx context.Context) (_ []mirror.CatalogRequest, wait func(stop bool) error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	fo := catalogimage.FetchOptions{Registry: r.srcRegistry(), Logger: r.log}
	if len(r.cfg.Mirror.Operators) > 0 {
		r.stage("catalogs")
	}
	var out []mirror.CatalogRequest
	settle := func() error { return nil } // waits for the last rebuild
	for _, op := range r.cfg.Mirror.Operators {
		if err := settle(); err != nil {
			return nil, nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		wrap := func(err error) error {
			return fmt.Errorf("catalog %s (%s line %d): %w", op.Catalog, r.cfg.Source, op.Line, err)
		}
		cr, rebuilding, err := r.catalog(ctx, op, fo)
		if err != nil {
			return nil, nil, wrap(err)
		}
		out = append(out, *cr)
		i := len(out) - 1
		settle = func() error {
			rb, err := rebuilding.wait()
			if err != nil {
				return wrap(err)
			}
			if rb != nil {
				out[i].Rebuilt = rb
			}
			return nil
		}
	}
	return out, func(stop bool) error {
		if stop {
			cancel()
		}
		err := settle()
		cancel() // nothing of the catalog stage runs on
		return err
	}, nil
}

// catalog fetches and prunes one catalog. The rebuild it starts runs on in
// the returned background, which records the memo and returns the rebuilt
// image (nil when the catalog was not rebuilt by this call; a nil background
// when the memo of an earlier run was used).
func (r *run) catalog(ctx context.Context, op imageset.Operator, fo catalogimage.FetchOptions) (*mirror.CatalogRequest, *background[*catalogimage.Rebuilt], error) {
	r.log.Debug("fetching catalog", "catalog", op.Catalog)
	// The catalog's files are parsed as they are extracted, on the core the
	// extraction leaves free.
	pf := fbc.NewPrefetch(ctx, catalogLoadOptions(r.log))
	fo.OnFile, fo.OnRestart = pf.Add, pf.Forget
	cache := r.workDir.OperatorCatalogsDir()
	if r.opts.CacheDir != "" {
		cache = workspace.CatalogCacheDir(r.opts.CacheDir)
	}
	fc, err := catalogimage.Fetch(ctx, op.Catalog, cache, fo)
	if err != nil {
		pf.Close()
		return nil, nil, err
	}
	cr := &mirror.CatalogRequest{
		Catalog: op.Catalog, SourceDigest: fc.Digest,
		TargetCatalog: op.TargetCatalog, TargetTag: op.TargetTag, Platforms: imageset.PlatformList(op.Platforms),
	}
	if op.IsFullCatalog() && fc.Database == "" {
		// Mirrored untouched: no filter, no rebuild. (A SQLite-based catalog is
		// always rebuilt, as the file-based catalog it converts to.)
		switch {
		case fc.LayoutPath != "":
			cr.SourceRepo = mirror.LayoutRepoPrefix + fc.LayoutPath
		case fc.ImageLayout != "":
			// Already copied, every platform, by the fetch.
			cr.SourceRepo = mirror.LayoutRepoPrefix + fc.ImageLayout
		default:
			cr.SourceRepo = fc.Source.Repository()
		}
	}
	base := workspace.Filtered(catalogRoot(fc), filterHash(op))
	memoPath := base.MemoPath()
	key := memoKey(fc, op)
	head, tail, rb, err := readMemo(ctx, memoPath, key, fc)
	if err == nil {
		pf.Close()
		r.log.Info("catalog unchanged since an earlier run with the same selection: reusing its pruned catalog", "catalog", op.Catalog, "memo", memoPath)
		// The report entry is the memo's, as decoded (the run's own to fill
		// in, no copy needed), once its tail is (settleCatalogs).
		rc := &report.Catalog{}
		r.rep.catalogs = append(r.rep.catalogs, rc)
		r.useMemo(cr, head, rb, catalogRecords{tail: tail, rc: rc})
		return cr, nil, nil
	}
	r.log.Debug("no usable catalog memo", "catalog", op.Catalog, "memo", memoPath, "reason", err)
	if err := dropMemo(memoPath); err != nil {
		pf.Close()
		return nil, nil, err
	}
	m, pruned, err := r.deriveCatalog(ctx, op, fc, pf)
	if err != nil {
		return nil, nil, err
	}
	m.Key = key
	r.useMemo(cr, &m.memoHead, nil, catalogRecords{wants: m.Wants})
	// The rebuild is the only user of the pruned catalog from here on.
	return cr, goBackground(ctx, func(ctx context.Context) (*catalogimage.Rebuilt, error) {
		var rb *catalogimage.Rebuilt
		if pruned != nil {
			var err error
			if rb, err = r.rebuildPruned(ctx, pruned, fc, base, ""); err != nil {
				return nil, err
			}
			m.Rebuilt = &memoRebuilt{LayoutDir: rb.LayoutDir, Tag: rb.Tag, Digest: rb.Digest, LayerDigest: rb.LayerDigest}
		}
		if key != "" {
			if err := writeMemo(memoPath, m); err != nil {
				r.log.Warn("could not record the pruned catalog for the next run", "catalog", op.Catalog, "error", err)
			}
		}
		return rb, nil
	}), nil
}

// catalogLoadOptions is how a run loads catalogs: heavy values checked and
// dropped (Write restores those of the bundles kept).
func catalogLoadOptions(log *slog.Logger) fbc.LoadOptions {
	return fbc.LoadOptions{ElideHeavy: true, Logger: log}
}

// deriveCatalog loads and filters the fetched catalog: everything but the
// rebuilt image is in the memo when it returns, with the pruned catalog to
// rebuild the image around (nil for a catalog mirrored untouched).
func (r *run) deriveCatalog(ctx context.Context, op imageset.Operator, fc *catalogimage.Fetched, pf *fbc.Prefetch) (*catalogMemo, *fbc.Catalog, error) {
	var cat *fbc.Catalog
	dir, err := fbcDir(ctx, fc, r.log)
	if err == nil && fc.DatabaseFile == "" {
		cat, err = pf.Load(ctx, dir)
	} else {
		pf.Close()
		if err == nil {
			cat, err = fbc.LoadDir(ctx, dir, catalogLoadOptions(r.log))
		}
	}
	if err != nil {
		return nil, nil, err
	}
	m := &catalogMemo{memoHead: memoHead{Version: memoVersion}}
	if op.IsFullCatalog() && fc.Database == "" {
		m.Images, m.Packages, m.Warnings = catalogImages(cat)
		m.Wants = catalogWants(op.Catalog, cat)
		r.recordCatalog(ctx, op, cat, cat, nil)
		if m.Report, err = copyReportCatalog(r.rep.catalogs[len(r.rep.catalogs)-1]); err != nil {
			return nil, nil, err
		}
		return m, nil, nil
	}
	pruned, expl, err := prune.Filter(cat, op, prune.FilterOptions{Logger: r.log})
	if err != nil {
		return nil, nil, err
	}
	if expl != nil {
		m.Warnings = append(m.Warnings, expl.Warnings...)
	}
	var warnings []string
	m.Images, m.Packages, warnings = catalogImages(pruned)
	m.Warnings = append(m.Warnings, warnings...)
	m.Wants = catalogWants(op.Catalog, pruned)
	r.recordCatalog(ctx, op, cat, pruned, expl)
	if m.Report, err = copyReportCatalog(r.rep.catalogs[len(r.rep.catalogs)-1]); err != nil {
		return nil, nil, err
	}
	return m, pruned, nil
}

// useMemo applies what the catalog stage derived (now or in an earlier run) to
// the request and the run; what only the records use (recs) is merged into
// the run by settleCatalogs.
func (r *run) useMemo(cr *mirror.CatalogRequest, m *memoHead, rb *catalogimage.Rebuilt, recs catalogRecords) {
	cr.Images = append(cr.Images, m.Images...)
	cr.Packages = append(cr.Packages, m.Packages...)
	if rb != nil {
		cr.Rebuilt = rb
	}
	r.res.Warnings = append(r.res.Warnings, m.Warnings...)
	r.catalogRecs = append(r.catalogRecs, recs)
}

// rebuildPruned writes the pruned catalog to base's configs and rebuilds the
// catalog image fc with it into base's OCI layout, tagged tag (fc's own tag
// when empty).
func (r *run) rebuildPruned(ctx context.Context, pruned *fbc.Catalog, fc *catalogimage.Fetched, base workspace.FilteredCatalog, tag string) (*catalogimage.Rebuilt, error) {
	prunedDir := base.ConfigsDir()
	if err := os.RemoveAll(prunedDir); err != nil {
		return nil, err
	}
	if err := fbc.Write(ctx, pruned, prunedDir, fbc.WriteOptions{}); err != nil {
		return nil, err
	}
	return catalogimage.Rebuild(ctx, fc, prunedDir, catalogimage.RebuildOptions{LayoutDir: base.ImageDir(), Tag: tag, Logger: r.log})
}

// catalogImages lists the images c names, its packages and the warnings about
// images that cannot be mirrored.
func catalogImages(c *fbc.Catalog) (images, packages, warnings []string) {
	uses, warnings := fbc.Images(c)
	for _, u := range uses {
		images = append(images, u.Image)
	}
	for _, p := range c.Packages {
		packages = append(packages, p.Name)
	}
	return images, packages, warnings
}
