package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/workspace"
)

// diskToMirror is the disconnected side: it opens the archive (and the
// batches it builds on), plans what the sources want among its content and
// pushes it to the destination registry.
func (r *run) diskToMirror(ctx context.Context) error {
	r.stage("open-archive")
	dir, err := archive.ResolveArchiveDir(r.topDir)
	if err != nil {
		return err
	}
	if r.opts.Archive.VerifyKey != "" {
		if _, err := archive.VerifySignature(dir, r.opts.Archive.VerifyKey); err != nil {
			return err
		}
	}
	ar, err := archive.Open(dir)
	if err != nil {
		return err
	}
	defer ar.Close()
	m := ar.ArchiveManifest()
	r.rep.archived = archivedReport(m)
	loaded, err := workspace.ReadLoaded(r.workDir)
	if err != nil {
		return err
	}
	if err := loaded.CheckOrder(m, r.dest); err != nil {
		return err
	}
	dst := r.destRegistry()
	// An incremental batch needs the batches it builds on at the destination:
	// check before anything is read or pushed. (A dry run only looks.)
	if len(ar.ReliesOn()) > 0 && !r.opts.Run.DryRun {
		if err := ar.EnsureReliesOn(ctx, dst, r.destRepo); err != nil {
			return err
		}
	}
	base, missing, err := r.planFromArchive(ctx, ar, dst)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return r.gapError(m, dir, missing)
	}
	sort.Strings(r.res.Repruned)
	p, err := base.Relocate(r.dest, r.opts.Destination.MaxNestedPaths)
	if err != nil {
		return err
	}
	if r.opts.Signatures.Mode == signature.Off {
		p.DropAttachments()
	}
	r.setPlan(p)
	if err := r.writePlan(ctx); err != nil {
		return err
	}
	src := &mirror.SourceMux{Default: ar}
	if r.opts.Run.DryRun {
		return r.dryRun(ctx, transfer.NewEstimator(src, dst, dryRunParallel), nil)
	}
	rep, err := r.copy(ctx, src, dst, nil)
	if err != nil {
		return err
	}
	notArchived := 0
	for _, im := range p.Failed() {
		if im.NotArchived {
			notArchived++
		}
	}
	// A partial batch is loaded once everything it holds is pushed.
	if len(rep.Failed()) == 0 && len(p.Failed()) == notArchived {
		if err := loaded.Add(m, dir, r.dest); err != nil {
			return err
		}
	}
	if err := r.clusterResources(); err != nil {
		return err
	}
	if notArchived > 0 && len(rep.Failed()) == 0 && len(p.Failed()) == notArchived {
		return fmt.Errorf("%w: %s is partial: %d image(s) this configuration asks for failed on the connected side and are not in it (listed in %s); everything it holds was pushed: carry the next batch mirror-to-disk writes to get them", ErrPartial, filepath.Base(dir), notArchived, r.workDir.ResultsPath())
	}
	return nil
}

// planFromArchive rebuilds the mirror-to-disk plan an archive recorded,
// keeping what the configuration asks for: each source says which archived
// images it still wants (a catalog pruned again when the configuration asks
// for less than the archive's selection) and what it asks for that the
// archive lacks (missing).
func (r *run) planFromArchive(ctx context.Context, ar *archive.Reader, dst endpoint.Source) (*mirror.Plan, []string, error) {
	m := ar.ArchiveManifest()
	in := Archived{Manifest: m, Content: &baseSource{ar: ar, dst: dst, repo: r.destRepo}}
	p := &mirror.Plan{Workflow: mirror.MirrorToDisk}
	var loads []*Loaded
	var adjust []func(*mirror.PlanImage)
	var missing []string
	for _, s := range r.sources() {
		in.Extras = map[string][]byte{}
		for _, x := range m.Extras {
			if x.Source == s.Name() {
				in.Extras[x.Name] = x.Data
			}
		}
		l, err := s.Load(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		loads = append(loads, l)
		p.Catalogs = append(p.Catalogs, l.Catalogs...)
		missing = append(missing, l.Missing...)
		r.res.Repruned = append(r.res.Repruned, l.Repruned...)
		r.addWants(l.Wants)
		r.res.Warnings = append(r.res.Warnings, l.Warnings...)
		r.res.Sources = append(r.res.Sources, l.Summary...)
		r.rep.pictures = append(r.rep.pictures, l.Pictures...)
		if l.Adjust != nil {
			adjust = append(adjust, l.Adjust)
		}
	}
	isBlocked := mirror.BlockedMatcher(r.blocked())
	failures := slices.Clone(m.Failed)
	failedSrc := map[string]archive.FailedRecord{}
	for _, f := range m.Failed {
		failedSrc[f.Source] = f
	}
	for _, ir := range m.Images {
		of := ir.Source // an attachment goes with its image
		if ir.Attachment != nil {
			of = ir.Attachment.Of
		}
		if f, ok := failedSrc[of]; ok && of != ir.Source {
			// Its image failed in another shard of a sharded batch: the
			// attachment is not pushed without it.
			failures = append(failures, archive.FailedRecord{Source: ir.Source, Destination: ir.Destination, Kind: ir.Kind,
				Origins: ir.Origins, Attachment: ir.Attachment, Error: "its image " + of + " failed", Transient: f.Transient})
			continue
		}
		var origins []string
		for _, l := range loads {
			if l.Keep != nil {
				origins = append(origins, l.Keep(ir, of)...)
			}
		}
		if len(origins) == 0 {
			continue
		}
		if isBlocked(ir.Source) || isBlocked(ir.Destination) {
			p.Blocked = append(p.Blocked, ir.Source)
			continue
		}
		im := mirror.PlanImage{
			Source: ir.Source, Kind: mirror.ImageKind(ir.Kind), Origins: origins,
			SourceRepo: ir.Destination, Digest: ir.Digest, MediaType: ir.MediaType,
			DestRepo: ir.Destination, Tags: ir.Tags, Platforms: ir.Platforms,
			Attachment: ir.Attachment, Signature: ir.Signature, Attachments: ir.Attachments, Built: ir.Built,
		}
		for _, f := range adjust {
			f(&im)
		}
		p.Images = append(p.Images, im)
	}
	p.Images = append(p.Images, r.archivedFailures(m, failures, loads, isBlocked)...)
	sort.Strings(missing)
	return p, missing, nil
}

// archivedFailures are the images a partial archive lacks because they failed
// on the connected side (m.Failed, and the attachments of those images that a
// sharded batch holds), those the configuration still wants: planned as
// failed, so that the summary, results.json and the report name them.
func (r *run) archivedFailures(m *archive.Manifest, failures []archive.FailedRecord, loads []*Loaded, isBlocked func(string) bool) []mirror.PlanImage {
	var out []mirror.PlanImage
	for _, f := range failures {
		ir := archive.ImageRecord{Source: f.Source, Destination: f.Destination, Kind: f.Kind, Origins: f.Origins, Attachment: f.Attachment}
		of := ir.Source
		if ir.Attachment != nil {
			of = ir.Attachment.Of
		}
		var origins []string
		for _, l := range loads {
			if l.Keep != nil {
				origins = append(origins, l.Keep(ir, of)...)
			}
		}
		if len(origins) == 0 || isBlocked(f.Source) {
			continue
		}
		again := "run mirror-to-disk again on the connected side"
		if !f.Transient {
			again = "fix it on the connected side (the reason above)"
		}
		out = append(out, mirror.PlanImage{
			Source: f.Source, Kind: mirror.ImageKind(f.Kind), Origins: origins, SourceRepo: f.Destination, DestRepo: f.Destination,
			Attachment: f.Attachment, NotArchived: true,
			Error: fmt.Sprintf("not in the archive: it failed when %s was written: %s; %s and load the next batch", archive.BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID}, f.Error, again),
		})
	}
	return out
}

// archivedWants learns, for the history, which bundles want each image of an
// archived catalog pushed as it was packed (a catalog pruned again is learnt by
// reselect). Failing that, the history names the catalog only.
func (r *run) archivedWants(ctx context.Context, src endpoint.Source, c archive.CatalogRecord) {
	_, cat, err := r.archivedCatalog(ctx, src, c)
	if err != nil {
		r.log.Warn("history: cannot read the archived catalog; its images are recorded by catalog only", "catalog", c.Source, "error", err)
		return
	}
	r.noteWants(c.Source, cat)
}

// destRepo maps an archive repository path to its repository at the destination.
func (r *run) destRepo(repo string) string {
	d, err := mirror.DestinationRepoPath(repo, r.dest, r.opts.Destination.MaxNestedPaths)
	if err != nil {
		return repo
	}
	return d
}

// baseSource reads an incremental batch: what the batch relies on (shipped by an
// earlier batch) is read from the destination, which holds it once the earlier
// batches were loaded.
type baseSource struct {
	ar   *archive.Reader
	dst  endpoint.Source
	repo func(string) string
}

func (b *baseSource) Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	return b.ar.Manifest(ctx, repo, reference)
}

func (b *baseSource) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	rc, err := b.ar.Blob(ctx, repo, d)
	if errors.Is(err, archive.ErrReliedOn) {
		return b.dst.Blob(ctx, b.repo(repo), d)
	}
	return rc, err
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
