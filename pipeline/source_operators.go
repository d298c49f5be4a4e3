package pipeline

import (
	"context"
	"slices"
	"sort"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/prune"
	"github.com/airlock-mirror/airlock/workspace"
)

// operatorSource is mirror.operators: each catalog fetched, pruned to what
// its entry asks for and rebuilt (catalogs.go), the bundle and related images
// the pruned catalog names, a CatalogSource and a ClusterCatalog for each.
// Its origins are the catalogs' references.
type operatorSource struct {
	r *run
	// templates are the targetCatalogSourceTemplates, read by Preflight.
	templates map[string]catalogTemplate
}

func (s *operatorSource) Name() string { return "operators" }

func (s *operatorSource) Owns(origin string) bool {
	r := s.r
	if r.cfg != nil && slices.ContainsFunc(r.cfg.Mirror.Operators, func(op imageset.Operator) bool { return op.Catalog == origin }) {
		return true
	}
	return r.res != nil && r.res.Plan != nil && slices.ContainsFunc(r.res.Plan.Catalogs, func(c mirror.PlanCatalog) bool { return c.Catalog == origin })
}

// Preflight reads every targetCatalogSourceTemplate and names the catalogs'
// registries (oci:// catalogs have none).
func (s *operatorSource) Preflight(context.Context) ([]Probe, error) {
	t, err := s.r.readTemplates()
	if err != nil {
		return nil, err
	}
	s.templates = t
	var out []Probe
	for _, op := range s.r.cfg.Mirror.Operators {
		if !op.IsOCI() {
			out = append(out, Probe{Ref: op.Catalog, What: "source registry of catalog " + op.Catalog})
		}
	}
	return out, nil
}

func (s *operatorSource) Select(ctx context.Context) (*Selection, error) {
	cats, finish, err := s.r.catalogsLater(ctx)
	if err != nil {
		return nil, err
	}
	return &Selection{Catalogs: cats, Finish: finish}, nil
}

// Load keeps the archived catalogs the configuration names (pruned again when
// it asks for less than the archive's selection) and the images they name.
func (s *operatorSource) Load(ctx context.Context, ar Archived) (*Loaded, error) {
	r := s.r
	m := ar.Manifest
	out := &Loaded{}
	want := map[string]bool{}
	narrowed := map[string]*narrowedCatalog{}
	archived := archivedOperators(m)
	for _, op := range r.cfg.Mirror.Operators {
		want[op.Catalog] = true
		found := false
		for _, c := range m.Catalogs {
			if c.Source != op.Catalog {
				continue
			}
			found = true
			sel, gaps, err := r.reselect(ctx, ar.Content, c, op, archived[op.Catalog])
			if err != nil {
				return nil, err
			}
			if len(gaps) > 0 {
				out.Missing = append(out.Missing, gaps...)
				continue
			}
			if sel.narrowed == nil && !r.opts.Run.DryRun {
				r.archivedWants(ctx, ar.Content, c)
			}
			pc := mirror.PlanCatalog{
				Catalog: c.Source, SourceDigest: c.SourceDigest, Rebuilt: c.Rebuilt,
				Digest: c.Digest, DestRepo: c.Destination, Tag: c.Tag, Packages: c.Packages,
			}
			if n := sel.narrowed; n != nil {
				pc.Rebuilt, pc.Digest, pc.Packages = true, n.rebuilt.Digest, n.packages
				narrowed[c.Source] = n
				out.Repruned = append(out.Repruned, c.Source)
			}
			out.Catalogs = append(out.Catalogs, pc)
		}
		if !found {
			out.Missing = append(out.Missing, "catalog "+op.Catalog+" (not in the archive)")
		}
	}
	sort.Strings(out.Repruned)
	out.Keep = func(ir archive.ImageRecord, of string) []string {
		var origins []string
		for _, o := range ir.Origins {
			if !want[o] {
				continue
			}
			if n := narrowed[o]; n != nil && ir.Kind != string(mirror.KindCatalog) && !n.images[of] {
				continue // the re-pruned catalog no longer names it
			}
			origins = append(origins, o)
		}
		return origins
	}
	out.Adjust = func(im *mirror.PlanImage) {
		if n := narrowed[im.Source]; n != nil && im.Kind == mirror.KindCatalog {
			// Read from the workspace, where it was rebuilt, not the archive.
			im.Digest, im.MediaType = n.rebuilt.Digest, string(n.rebuilt.MediaType)
			im.SourceRepo = mirror.LayoutRepoPrefix + n.rebuilt.LayoutDir
		}
	}
	return out, nil
}

// Resources are a CatalogSource and a ClusterCatalog for each catalog whose
// image was mirrored (with its targetCatalogSourceTemplate).
func (s *operatorSource) Resources(p *mirror.Plan, mirrored func(mirror.PlanImage) bool) (Resources, error) {
	ok := map[string]bool{}
	for _, im := range p.Images {
		if im.Kind == mirror.KindCatalog && mirrored(im) {
			ok[im.Source] = true
		}
	}
	var out Resources
	for _, c := range p.Catalogs {
		if c.DestRepo == "" || !ok[c.Catalog] {
			// Not mirrored: a CatalogSource would point at nothing.
			continue
		}
		mc := manifests.Catalog{Source: c.Catalog, Destination: c.DestRepo + ":" + c.Tag, Digest: c.Digest.String()}
		if t, ok := s.templates[c.Catalog]; ok {
			mc.Template, mc.TemplatePath = t.data, t.path
		}
		out.Catalogs = append(out.Catalogs, mc)
	}
	return out, nil
}

// Wants: a catalog image is wanted as the catalog; the images it names by
// the bundles that use them (learnt while pruning), or by the catalog alone
// (an archive loaded as it was packed, its catalog unread).
func (s *operatorSource) Wants(im mirror.PlanImage, origin string) []workspace.Want {
	if im.Kind == mirror.KindCatalog {
		return []workspace.Want{{Kind: workspace.WantCatalog, Catalog: im.Source}}
	}
	var out []workspace.Want
	for _, w := range s.r.wants[im.Owner()] {
		if w.Catalog == origin {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		out = append(out, workspace.Want{Kind: workspace.WantBundle, Catalog: origin})
	}
	return out
}

// Pin pins each catalog to the digest the run used and names the bundles it
// selected (learnt while pruning).
func (s *operatorSource) Pin(p *mirror.Plan, pins *imageset.Pins) {
	for _, c := range p.Catalogs {
		pins.Catalogs[c.Catalog] = imageset.CatalogPin{Digest: c.SourceDigest.String(), Bundles: map[string][]string{}}
	}
	for _, ws := range s.r.wants {
		for _, w := range ws {
			if cp, ok := pins.Catalogs[w.Catalog]; ok && w.Kind == workspace.WantBundle && w.Bundle != "" {
				cp.Bundles[w.Package] = append(cp.Bundles[w.Package], w.Bundle)
			}
		}
	}
}

// Deletes: delete.operators names a catalog (every package: its image too),
// or packages of it, each selecting bundles as mirror.operators would.
func (s *operatorSource) Deletes(cfg *imageset.DeleteImageSetConfiguration, w workspace.Want) (bool, bool) {
	switch w.Kind {
	case workspace.WantCatalog:
		for _, op := range cfg.Delete.Operators {
			if op.Catalog == w.Catalog && len(op.Packages) == 0 {
				return true, true
			}
		}
		return false, true
	case workspace.WantBundle:
	default:
		return false, false
	}
	for _, op := range cfg.Delete.Operators {
		if op.Catalog != w.Catalog {
			continue
		}
		if len(op.Packages) == 0 {
			return true, true
		}
		if w.Bundle == "" {
			continue // known by catalog only: cannot tell its package
		}
		for _, p := range op.Packages {
			if p.Name == w.Package && prune.SelectsBundle(p, w.Bundle, w.Version, w.Channels) {
				return true, true
			}
		}
	}
	return false, true
}
