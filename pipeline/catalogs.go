package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/prune"
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

// catalogs fetches, prunes and rebuilds every operator catalog of the config.
func (r *run) catalogs(ctx context.Context) ([]mirror.CatalogRequest, error) {
	fo := mirror.FetchOptions{Registry: r.srcRegistry(), Logger: r.log}
	if len(r.cfg.Mirror.Operators) > 0 {
		r.stage("catalogs")
	}
	var out []mirror.CatalogRequest
	for _, op := range r.cfg.Mirror.Operators {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cr, err := r.catalog(ctx, op, fo)
		if err != nil {
			return nil, fmt.Errorf("catalog %s (%s line %d): %w", op.Catalog, r.cfg.Source, op.Line, err)
		}
		out = append(out, *cr)
	}
	return out, nil
}

func (r *run) catalog(ctx context.Context, op imageset.Operator, fo mirror.FetchOptions) (*mirror.CatalogRequest, error) {
	r.log.Info("fetching catalog", "catalog", op.Catalog)
	fc, err := mirror.FetchCatalogWithOptions(ctx, op.Catalog, filepath.Join(r.workDir, "operator-catalogs"), fo)
	if err != nil {
		return nil, err
	}
	dir, err := fbcDir(ctx, fc, r.log)
	if err != nil {
		return nil, err
	}
	cat, err := prune.LoadDir(ctx, dir, prune.LoadOptions{ElideHeavy: true, Logger: r.log})
	if err != nil {
		return nil, err
	}
	cr := &mirror.CatalogRequest{
		Catalog: op.Catalog, SourceDigest: fc.Digest,
		TargetCatalog: op.TargetCatalog, TargetTag: op.TargetTag,
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
		r.addImages(cr, cat)
		r.noteWants(op.Catalog, cat)
		r.recordCatalog(ctx, op, cat, cat, nil)
		return cr, nil
	}
	pruned, expl, err := prune.Filter(cat, op, prune.FilterOptions{Logger: r.log})
	if err != nil {
		return nil, err
	}
	if expl != nil {
		r.res.Warnings = append(r.res.Warnings, expl.Warnings...)
	}
	base := filepath.Join(filepath.Dir(fc.ConfigsDir), "filtered", filterHash(op))
	prunedDir := filepath.Join(base, "configs")
	if err := os.RemoveAll(prunedDir); err != nil {
		return nil, err
	}
	if err := prune.Write(ctx, pruned, prunedDir, prune.WriteOptions{}); err != nil {
		return nil, err
	}
	rb, err := mirror.RebuildCatalog(ctx, fc, prunedDir, mirror.RebuildOptions{LayoutDir: filepath.Join(base, "image"), Logger: r.log})
	if err != nil {
		return nil, err
	}
	cr.Rebuilt = rb
	r.addImages(cr, pruned)
	r.noteWants(op.Catalog, pruned)
	r.recordCatalog(ctx, op, cat, pruned, expl)
	return cr, nil
}

func (r *run) addImages(cr *mirror.CatalogRequest, c *prune.Catalog) {
	uses, warnings := prune.Images(c)
	r.res.Warnings = append(r.res.Warnings, warnings...)
	for _, u := range uses {
		cr.Images = append(cr.Images, u.Image)
	}
	for _, p := range c.Packages {
		cr.Packages = append(cr.Packages, p.Name)
	}
}

func (r *run) additional() []mirror.AdditionalImage {
	var out []mirror.AdditionalImage
	for _, im := range r.cfg.Mirror.AdditionalImages {
		out = append(out, mirror.AdditionalImage{Name: im.Ref(), TargetRepo: im.TargetRepo, TargetTag: im.TargetTag})
	}
	return out
}

func (r *run) blocked() []string {
	var out []string
	for _, b := range r.cfg.Mirror.BlockedImages {
		out = append(out, b.Name)
	}
	return out
}
