package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/workspace"
)

func (r *run) mirrorToDisk(ctx context.Context, probes *background[struct{}]) error {
	switch {
	case r.opts.Run.Finish:
		return r.finish(ctx)
	case r.opts.Run.PlanFile != "":
		return r.shard(ctx)
	case !r.opts.Run.PlanOnly && !r.opts.Run.DryRun:
		// Refused before planning, which would overwrite the shards' plan.
		if err := r.noShardsPending(); err != nil {
			return err
		}
	}
	mux := r.sourceMux()
	if _, err := r.planSources(ctx, mux, probes, nil, nil); err != nil {
		return err
	}
	if r.opts.Run.PlanOnly {
		return r.recordBlobs(ctx, mux)
	}
	state, shipped, buildsOn, err := r.archiveBase()
	if err != nil {
		return err
	}
	batchDir, batch, resume, err := archive.NextBatch(r.topDir)
	if err != nil {
		return err
	}
	if r.opts.Run.DryRun {
		// Nothing is written into the target: the estimate compares with what
		// earlier batches shipped.
		return r.dryRun(ctx, transfer.NewEstimator(mux, shipped, dryRunParallel), nil)
	}
	if !resume && !r.opts.Archive.Full && r.opts.Archive.SinceArchive.IsZero() && r.opts.Archive.Since.IsZero() && len(r.res.Plan.Failed()) == 0 {
		if r.res.NothingNew, err = state.Unchanged(archiveImages(r.res.Plan, nil), archiveCatalogs(r.res.Plan), r.sameMirrorConfig); err != nil || r.res.NothingNew != nil {
			return err // nothing new: no batch is written
		}
	}
	if resume {
		r.log.Info("resuming the unfinished batch of an interrupted run", "batch", batchDir)
	}
	w, err := archive.NewWriter(batchDir, archive.WriterOptions{
		ChunkSize: r.cfg.ArchiveSizeBytes(), Shipped: shipped, Logger: r.log, Strict: r.opts.Archive.Strict, SignKey: r.opts.Archive.SignKey,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	rep, err := r.copy(ctx, mux, w, nil)
	if err != nil {
		return err
	}
	for _, ir := range rep.Failed() {
		if ir.Class == transfer.ClassDiskFull {
			return fmt.Errorf("%w: the disk is full: %s stays unfinished (what was downloaded is kept there and is not downloaded again); free space on that disk, then run the same command again to finish it", ErrIncomplete, batchDir)
		}
	}
	failed := archiveFailed(r.res.Plan, rep)
	if len(failed) > 0 && (r.opts.Archive.AllOrNothing || failedCatalog(failed)) {
		why := "--all-or-nothing"
		if failedCatalog(failed) {
			why = "a catalog image failed"
		}
		return fmt.Errorf("%w: %d image(s) failed and %s, so no archive was written: %s stays unfinished (what was downloaded is kept there and is not downloaded again); see the failures above, then run the same command again to finish it", ErrIncomplete, len(failed), why, batchDir)
	}
	r.stage("archive")
	cfgJSON, err := json.Marshal(r.cfg)
	if err != nil {
		return err
	}
	m, err := w.Finish(ctx, archive.Meta{Batch: batch, BuildsOn: buildsOn, Config: cfgJSON, Images: archiveImages(r.res.Plan, failed), Catalogs: archiveCatalogs(r.res.Plan), Extras: append(archiveExtras(r.res.Plan), r.reportExtras()...), Failed: failed})
	if err != nil {
		return err
	}
	if err := r.archiveWritten(state, m, batchDir, resume); err != nil {
		return err
	}
	if len(failed) > 0 {
		r.res.Archive.Failed = len(failed)
		return fmt.Errorf("%w: %d image(s) failed and are not in %s (it records them; results.json lists why); the batch holds everything else: carry it across and load it, and run the same command again to carry the failed images in the next batch (--all-or-nothing writes no batch instead)", ErrPartial, len(failed), batchDir)
	}
	return nil
}

// archiveFailed are the images of the plan that could not be planned or
// copied, and the attachments of those images, as a partial archive records
// them.
func archiveFailed(p *mirror.Plan, rep *transfer.Report) []archive.FailedRecord {
	copyErr := map[string]transfer.ImageResult{}
	if rep != nil {
		for _, ir := range rep.Failed() {
			copyErr[ir.Job.Key()] = ir
		}
	}
	failedOf := map[string]bool{}
	var out []archive.FailedRecord
	add := func(im mirror.PlanImage, msg string, transient bool) {
		failedOf[im.Source] = true
		if im.Hint != "" {
			msg = im.Hint + " (" + msg + ")"
		}
		out = append(out, archive.FailedRecord{Source: im.Source, Destination: im.DestRepo, Kind: string(im.Kind),
			Origins: im.Origins, Attachment: im.Attachment, Error: msg, Transient: transient})
	}
	for _, im := range p.Images {
		if im.Error != "" {
			add(im, im.Error, im.Class.Transient())
		} else if ir, ok := copyErr[im.Job().Key()]; ok {
			im.Hint = ir.Hint
			add(im, ir.Err, ir.Class.Transient())
		}
	}
	// An attachment goes with its image: one whose image failed is left out.
	for _, im := range p.Images {
		if im.Attachment != nil && failedOf[im.Attachment.Of] && !failedOf[im.Source] {
			add(im, "its image "+im.Attachment.Of+" failed", false)
		}
	}
	return out
}

// failedCatalog reports whether a catalog image is among failed: its catalog's
// images would be pushed without it, so no partial batch is written.
func failedCatalog(failed []archive.FailedRecord) bool {
	for _, f := range failed {
		if f.Kind == string(mirror.KindCatalog) {
			return true
		}
	}
	return false
}

// sameMirrorConfig reports whether an archive made with config (its recorded
// configuration) asks for what this run's configuration asks for: the same
// mirror section. Disk-to-mirror judges a configuration against the one the
// archive recorded, so a batch that carries the same images but was made with
// another configuration is not "nothing new": the next batch records this one.
func (r *run) sameMirrorConfig(config json.RawMessage) bool {
	var archived imageset.ImageSetConfiguration
	if len(config) == 0 || json.Unmarshal(config, &archived) != nil {
		return false
	}
	a, errA := json.Marshal(archived.Mirror)
	b, errB := json.Marshal(r.cfg.Mirror)
	return errA == nil && errB == nil && string(a) == string(b)
}

// archiveWritten records the archive written into dir in the state and the
// run's result.
func (r *run) archiveWritten(state *archive.State, m *archive.Manifest, dir string, resume bool) error {
	if err := state.Record(m, dir); err != nil {
		return err
	}
	sum := &ArchiveSummary{Dir: dir, ArchiveID: m.ArchiveID, Batch: m.Batch, BuildsOn: m.BuildsOn, Resumed: resume,
		Blobs: len(m.Blobs), Bytes: m.TotalBlobBytes(), ReliesOn: len(m.ReliesOn), Incremental: len(m.BuildsOn) > 0}
	for _, c := range m.Chunks {
		sum.Chunks = append(sum.Chunks, c.Name)
	}
	r.res.Archive = sum
	return nil
}

// archiveBase reads the target's archive state and says which blobs earlier
// archives shipped (none with --full; --since-archive's instead of the state's)
// and the batches the next one builds on.
func (r *run) archiveBase() (*archive.State, archive.ShippedSet, []archive.BatchRef, error) {
	state, err := archive.LoadState(workspace.At(r.workspace).ArchiveStatePath())
	if err != nil {
		return nil, nil, nil, err
	}
	var shipped archive.ShippedSet
	var buildsOn []archive.BatchRef
	switch {
	case r.opts.Archive.Full:
	case !r.opts.Archive.Since.IsZero():
		shipped, buildsOn = state.ShippedBefore(r.opts.Archive.Since)
		r.log.Info("--since: building on the batches written before it", "since", r.opts.Archive.Since.Format(time.DateOnly), "batches", len(buildsOn))
	case !r.opts.Archive.SinceArchive.IsZero():
		dir := r.opts.Archive.SinceArchive.Path
		if shipped, buildsOn, err = archive.SinceArchive(dir); err != nil {
			return nil, nil, nil, fmt.Errorf("--since-archive %s: %w", dir, err)
		}
	default:
		shipped, buildsOn = state.Shipped(), state.BuildsOn()
	}
	if len(shipped) > 0 {
		r.log.Info("incremental archive: blobs shipped by earlier archives are not shipped again", "known", len(shipped))
	}
	return state, shipped, buildsOn, nil
}

// archiveImages are the plan's images but failed ones (archiveFailed).
func archiveImages(p *mirror.Plan, failed []archive.FailedRecord) []archive.ImageRecord {
	skip := map[string]bool{}
	for _, f := range failed {
		skip[f.Source+"\x00"+f.Destination] = true
	}
	var out []archive.ImageRecord
	for _, im := range p.Images {
		if im.Error != "" || skip[im.Source+"\x00"+im.DestRepo] {
			continue
		}
		out = append(out, archive.ImageRecord{
			Source: im.Source, Digest: im.Digest, Destination: im.DestRepo, Tags: im.Tags,
			MediaType: im.MediaType, Kind: string(im.Kind), Origins: im.Origins, Platforms: im.Platforms,
			Attachment: im.Attachment, Signature: im.Signature, Attachments: im.Attachments, Built: im.Built,
		})
	}
	return out
}

// archiveExtras are the files the plan's sources carry to the far side.
func archiveExtras(p *mirror.Plan) []archive.ExtraRecord {
	var out []archive.ExtraRecord
	for src, files := range p.Extras {
		for name, data := range files {
			out = append(out, archive.ExtraRecord{Source: src, Name: name, Data: data})
		}
	}
	return out // archive.Writer sorts them
}

func archiveCatalogs(p *mirror.Plan) []archive.CatalogRecord {
	var out []archive.CatalogRecord
	for _, c := range p.Catalogs {
		out = append(out, archive.CatalogRecord{
			Source: c.Catalog, SourceDigest: c.SourceDigest, Destination: c.DestRepo,
			Digest: c.Digest, Tag: c.Tag, Packages: c.Packages, Rebuilt: c.Rebuilt, Platforms: c.Platforms,
		})
	}
	return out
}

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
		if l.Adjust != nil {
			adjust = append(adjust, l.Adjust)
		}
	}
	isBlocked := mirror.BlockedMatcher(r.blocked())
	for _, ir := range m.Images {
		of := ir.Source // an attachment goes with its image
		if ir.Attachment != nil {
			of = ir.Attachment.Of
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
	p.Images = append(p.Images, r.archivedFailures(m, loads, isBlocked)...)
	sort.Strings(missing)
	return p, missing, nil
}

// archivedFailures are the images a partial archive lacks because they failed
// on the connected side, those the configuration still wants: planned as
// failed, so that the summary, results.json and the report name them.
func (r *run) archivedFailures(m *archive.Manifest, loads []*Loaded, isBlocked func(string) bool) []mirror.PlanImage {
	var out []mirror.PlanImage
	for _, f := range m.Failed {
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
