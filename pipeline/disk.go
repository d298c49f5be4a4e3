package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
)

func (r *run) mirrorToDisk(ctx context.Context) error {
	r.stage("catalogs")
	cats, err := r.catalogs(ctx)
	if err != nil {
		return err
	}
	src := r.srcRegistry()
	if err := r.plan(ctx, src, cats); err != nil {
		return err
	}
	mux := &mirror.SourceMux{Default: src}
	statePath := filepath.Join(r.workDir, "archive-state.json")
	state, err := archive.LoadState(statePath)
	if err != nil {
		return err
	}
	var shipped archive.ShippedSet
	switch {
	case r.opts.Full:
	case r.opts.SinceArchive != "":
		dir := strings.TrimPrefix(r.opts.SinceArchive, "file://")
		if shipped, err = archive.SinceArchive(dir); err != nil {
			return fmt.Errorf("--since-archive %s: %w", dir, err)
		}
	default:
		shipped = state.Shipped()
	}
	if len(shipped) > 0 {
		r.log.Info("incremental archive: blobs shipped by earlier archives are not shipped again", "known", len(shipped))
	}
	w, err := archive.NewWriter(r.topDir, archive.WriterOptions{
		ChunkSize: r.cfg.ArchiveSizeBytes(), Shipped: shipped, Replace: true, Logger: r.log,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	if r.opts.DryRun {
		return r.dryRun(ctx, mux, w)
	}
	r.stage("copy")
	rep, err := mirror.Copy(ctx, mux, w, r.res.Plan.Jobs(), r.copyOptions())
	r.setCopy(rep)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, mirror.ErrRegistryUnreachable) {
		return err
	}
	if failed := len(r.res.Plan.Failed()) + len(rep.Failed()); failed > 0 {
		return fmt.Errorf("%w: %d image(s) failed, so no archive was written (what was downloaded is kept in %s and is not downloaded again); fix or block the failing images and run the same command again", ErrIncomplete, failed, r.topDir)
	}
	r.stage("archive")
	cfgJSON, err := json.Marshal(r.cfg)
	if err != nil {
		return err
	}
	m, err := w.Finish(ctx, archive.Meta{Config: cfgJSON, Images: archiveImages(r.res.Plan), Catalogs: archiveCatalogs(r.res.Plan)})
	if err != nil {
		return err
	}
	if err := state.Record(m, r.topDir); err != nil {
		return err
	}
	sum := &ArchiveSummary{Dir: r.topDir, ArchiveID: m.ArchiveID, Blobs: len(m.Blobs), Bytes: m.TotalBlobBytes(), ReliesOn: len(m.ReliesOn), Incremental: len(m.ReliesOn) > 0}
	for _, c := range m.Chunks {
		sum.Chunks = append(sum.Chunks, c.Name)
	}
	r.res.Archive = sum
	return nil
}

func archiveImages(p *mirror.Plan) []archive.ImageRecord {
	var out []archive.ImageRecord
	for _, im := range p.Images {
		if im.Error != "" {
			continue
		}
		out = append(out, archive.ImageRecord{
			Source: im.Source, Digest: im.Digest, Destination: im.DestRepo, Tags: im.Tags,
			MediaType: im.MediaType, Kind: string(im.Kind), Origins: im.Origins,
		})
	}
	return out
}

func archiveCatalogs(p *mirror.Plan) []archive.CatalogRecord {
	var out []archive.CatalogRecord
	for _, c := range p.Catalogs {
		out = append(out, archive.CatalogRecord{
			Source: c.Catalog, SourceDigest: c.SourceDigest, Destination: c.DestRepo,
			Digest: c.Digest, Tag: c.Tag, Packages: c.Packages, Rebuilt: c.Rebuilt,
		})
	}
	return out
}

func (r *run) diskToMirror(ctx context.Context) error {
	r.stage("archive")
	ar, err := archive.Open(r.topDir)
	if err != nil {
		return err
	}
	defer ar.Close()
	base, missing := planFromArchive(ar.ArchiveManifest(), r.cfg)
	if len(missing) > 0 {
		return fmt.Errorf("the archive in %s lacks what %s asks for:\n  %s\nrun mirror-to-disk with this configuration, or give disk-to-mirror the configuration the archive was made with", r.topDir, r.cfg.Source, strings.Join(missing, "\n  "))
	}
	p, err := base.Relocate(r.dest, r.opts.MaxNestedPaths)
	if err != nil {
		return err
	}
	r.setPlan(p)
	if err := r.writePlan(); err != nil {
		return err
	}
	dst := r.destRegistry()
	if r.opts.DryRun {
		return r.dryRun(ctx, ar, dst)
	}
	r.stage("copy")
	if len(ar.ReliesOn()) > 0 {
		rel := map[string]string{}
		for _, im := range p.Images {
			rel[im.SourceRepo] = im.DestRepo
		}
		if err := ar.EnsureReliesOn(ctx, dst, func(repo string) string {
			if d, ok := rel[repo]; ok {
				return d
			}
			d, err := mirror.DestinationRepoPath(repo, r.dest, r.opts.MaxNestedPaths)
			if err != nil {
				return repo
			}
			return d
		}); err != nil {
			return err
		}
	}
	rep, err := mirror.Copy(ctx, ar, dst, p.Jobs(), r.copyOptions())
	r.setCopy(rep)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, mirror.ErrRegistryUnreachable) {
		return err
	}
	return r.clusterResources()
}

// planFromArchive rebuilds the mirror-to-disk plan an archive recorded, keeping
// what cfg asks for; missing lists what cfg asks for that the archive lacks.
func planFromArchive(m *archive.Manifest, cfg *imageset.ImageSetConfiguration) (*mirror.Plan, []string) {
	p := &mirror.Plan{Workflow: mirror.MirrorToDisk}
	wantCatalog := map[string]bool{}
	var missing []string
	archived := archivedOperators(m)
	for _, op := range cfg.Mirror.Operators {
		found := false
		for _, c := range m.Catalogs {
			if c.Source != op.Catalog {
				continue
			}
			found = true
			if lack := selectionLacks(op, archived[op.Catalog], c.Packages); len(lack) > 0 {
				missing = append(missing, lack...)
				continue
			}
			p.Catalogs = append(p.Catalogs, mirror.PlanCatalog{
				Catalog: c.Source, SourceDigest: c.SourceDigest, Rebuilt: c.Rebuilt,
				Digest: c.Digest, DestRepo: c.Destination, Tag: c.Tag, Packages: c.Packages,
			})
		}
		if !found {
			missing = append(missing, "catalog "+op.Catalog)
		}
		wantCatalog[op.Catalog] = true
	}
	wantAdditional := map[string]bool{}
	for _, im := range cfg.Mirror.AdditionalImages {
		wantAdditional[im.Ref()] = true
	}
	blocked := []string{}
	for _, b := range cfg.Mirror.BlockedImages {
		blocked = append(blocked, b.Name)
	}
	isBlocked := mirror.BlockedMatcher(blocked)
	seenAdditional := map[string]bool{}
	for _, ir := range m.Images {
		keep := false
		for _, o := range ir.Origins {
			if wantCatalog[o] {
				keep = true
			}
		}
		if wantAdditional[ir.Source] {
			keep = true
			seenAdditional[ir.Source] = true
		}
		if !keep {
			continue
		}
		if isBlocked(ir.Source) || isBlocked(ir.Destination) {
			p.Blocked = append(p.Blocked, ir.Source)
			continue
		}
		p.Images = append(p.Images, mirror.PlanImage{
			Source: ir.Source, Kind: mirror.ImageKind(ir.Kind), Origins: ir.Origins,
			SourceRepo: ir.Destination, Digest: ir.Digest, MediaType: ir.MediaType,
			DestRepo: ir.Destination, Tags: ir.Tags,
		})
	}
	for ref := range wantAdditional {
		if !seenAdditional[ref] {
			missing = append(missing, "additional image "+ref)
		}
	}
	sort.Strings(missing)
	return p, missing
}

// archivedOperators returns the operator entries of the configuration the
// archive was made with, by catalog.
func archivedOperators(m *archive.Manifest) map[string]*imageset.Operator {
	out := map[string]*imageset.Operator{}
	var cfg imageset.ImageSetConfiguration
	if len(m.Config) == 0 || json.Unmarshal(m.Config, &cfg) != nil {
		return out
	}
	for i := range cfg.Mirror.Operators {
		op := &cfg.Mirror.Operators[i]
		out[op.Catalog] = op
	}
	return out
}

// selectionLacks says what op asks for that the archived catalog (made with the
// entry archived, holding packages) cannot give. The same selection, or a list of
// packages the archived catalog holds, is fine: disk-to-mirror pushes the pruned
// catalog as it was archived.
func selectionLacks(op imageset.Operator, archived *imageset.Operator, packages []string) []string {
	if archived == nil || filterHash(op) == filterHash(*archived) {
		return nil
	}
	if len(op.Packages) == 0 {
		return []string{fmt.Sprintf("catalog %s: every package (the archive holds a pruned catalog with %s)", op.Catalog, strings.Join(packages, ", "))}
	}
	have := map[string]bool{}
	for _, p := range packages {
		have[p] = true
	}
	var lack []string
	for _, pk := range op.Packages {
		if !have[pk.Name] {
			lack = append(lack, fmt.Sprintf("catalog %s: package %s", op.Catalog, pk.Name))
		}
	}
	return lack
}
