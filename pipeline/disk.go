package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/workspace"
)

// mirrorToDisk is the connected side of the air gap: it plans what the
// sources select and writes it as a batch of the archive (see archiveBase for
// what earlier batches already shipped).
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
	if r.opts.Run.PlanOnly || r.opts.Run.DryRun {
		return r.planToDisk(ctx, mux, probes)
	}
	state, shipped, buildsOn, err := r.archiveBase()
	if err != nil {
		return err
	}
	batchDir, batch, resume, err := archive.NextBatch(r.topDir)
	if err != nil {
		return err
	}
	// The batch's writer is opened before planning so that the blobs of the
	// images resolved are fetched into its staging area while planning goes
	// on (the prefetch); it is removed again when the run ends having
	// written nothing into it (nothing new, or planning failed).
	w, err := archive.NewWriter(batchDir, archive.WriterOptions{
		ChunkSize: r.cfg.ArchiveSizeBytes(), Shipped: shipped, Logger: r.log, Strict: r.opts.Archive.Strict, FreeSpace: r.opts.freeSpace, SignKey: r.opts.Archive.SignKey,
	})
	if err != nil {
		return err
	}
	empty := w.Empty() // an interrupted run's batch holding nothing is no batch yet
	if resume && !empty {
		r.log.Info("resuming the unfinished batch of an interrupted run", "batch", batchDir)
	}
	defer func() { r.closeBatch(w, batchDir, empty) }()
	pre := r.startDiskPrefetch(ctx, mux, w)
	defer pre.Stop()
	if _, err := r.planSources(ctx, mux, probes, pre, nil); err != nil {
		return err
	}
	if (!resume || empty) && !r.opts.Archive.Full && r.opts.Archive.SinceArchive.IsZero() && r.opts.Archive.Since.IsZero() && len(r.res.Plan.Failed()) == 0 {
		if r.res.NothingNew, err = state.Unchanged(archiveImages(r.res.Plan, nil), archiveCatalogs(r.res.Plan), r.sameMirrorConfig); err != nil || r.res.NothingNew != nil {
			return err // nothing new: no batch is written
		}
	}
	rep, err := r.copy(ctx, mux, w, pre)
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
