package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// Sharded mirror-to-disk: every shard writes its own chunks and record into the
// target's unfinished batch (archive.FinishShard), and --finish writes the
// catalogs and the manifests and assembles the archive (archive.FinishSharded).

// diskShard writes shard sh of the plan into the target's unfinished batch. A
// shard that finished before does nothing; one that was interrupted resumes,
// fetching only what it had not staged.
func (r *run) diskShard(ctx context.Context, src *mirror.SourceMux, sh mirror.Shard) error {
	_, shipped, buildsOn, err := r.archiveBase()
	if err != nil {
		return err
	}
	dir, batch, _, err := archive.NextBatch(r.topDir)
	if err != nil {
		return err
	}
	part := archive.ShardPart(r.opts.Run.Shard, r.opts.Run.Shards)
	sub := r.res.Plan
	rec, err := archive.ReadShard(dir, r.opts.Run.Shard, r.opts.Run.Shards)
	if err != nil {
		return err
	}
	if rec != nil {
		if err := sameImages(rec, archiveImages(sub, rec.Failed), r.opts.Run.PlanFile); err != nil {
			return err
		}
		r.log.Info("this shard already finished: nothing to write", "shard", part, "batch", dir)
		rep := &transfer.Report{}
		for _, im := range sub.Images {
			rep.Images = append(rep.Images, shardOutcome(im, rec.Part, rec.Failed))
		}
		r.setCopy(rep)
		r.res.Archive = shardSummary(dir, rec, true)
		return shardPartial(rec, dir)
	}
	w, err := archive.NewWriter(dir, archive.WriterOptions{
		ChunkSize: r.cfg.ArchiveSizeBytes(), Shipped: shipped, Logger: r.log, Part: part, Elsewhere: sh.Elsewhere, Strict: r.opts.Archive.Strict, FreeSpace: r.opts.freeSpace,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	rep, err := r.copyJobs(ctx, src, w, sub.Jobs(), nil)
	if err != nil {
		return err
	}
	failed := archiveFailed(sub, rep)
	if len(failed) > 0 && r.opts.Archive.AllOrNothing {
		return fmt.Errorf("%w: %d image(s) failed and --all-or-nothing, so shard %s is not finished: what it wrote stays in %s and is not fetched again; see the failures above, then run the shard again", ErrIncomplete, len(failed), part, dir)
	}
	r.stage("archive")
	rec, err = w.FinishShard(ctx, archive.Meta{Batch: batch, BuildsOn: buildsOn, Images: archiveImages(sub, failed), Failed: failed})
	if err != nil {
		return err
	}
	r.res.Archive = shardSummary(dir, rec, false)
	return shardPartial(rec, dir)
}

// shardPartial is the error of a shard that finished without some of its
// images (ErrPartial), nil when it has them all.
func shardPartial(rec *archive.ShardRecord, dir string) error {
	if len(rec.Failed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d image(s) failed, so shard %s finished without them (its record %s lists them; results.json says why): --finish writes a partial batch that records them, and the next mirror-to-disk carries them (--all-or-nothing leaves the shard unfinished instead)",
		ErrPartial, len(rec.Failed), rec.Part, filepath.Join(dir, archive.ShardRecordName(rec.Part)))
}

// shardOutcome is what a finished shard did with im: failed when the shard's
// record lists it among its failures (part, when set, names the shard in
// the error), else written.
func shardOutcome(im mirror.PlanImage, part string, failed []archive.FailedRecord) transfer.ImageResult {
	for _, f := range failed {
		if f.Source == im.Source && f.Destination == im.DestRepo {
			class := transfer.ClassOther
			if f.Transient {
				class = transfer.ClassTransient
			}
			msg := f.Error
			if part != "" {
				msg = part + ": " + msg
			}
			return transfer.ImageResult{Job: im.Job(), Status: transfer.StatusFailed, Class: class,
				Err: msg, Hint: "not in the batch: the next mirror-to-disk carries it"}
		}
	}
	return transfer.ImageResult{Job: im.Job(), Status: transfer.StatusSkipped}
}

// shardSummary describes what a shard wrote.
func shardSummary(dir string, rec *archive.ShardRecord, resumed bool) *ArchiveSummary {
	sum := &ArchiveSummary{Dir: dir, Part: rec.Part, Batch: rec.Batch, BuildsOn: rec.BuildsOn, Resumed: resumed,
		Blobs: len(rec.Blobs), Bytes: rec.BlobBytes(), ReliesOn: len(rec.ReliesOn), Incremental: len(rec.BuildsOn) > 0, Failed: len(rec.Failed)}
	for _, c := range rec.Chunks {
		sum.Chunks = append(sum.Chunks, c.Name)
	}
	return sum
}

// sameImages checks that a shard record holds the images the plan gives that
// shard.
func sameImages(rec *archive.ShardRecord, want []archive.ImageRecord, planFile string) error {
	key := func(im archive.ImageRecord) string {
		tags := append([]string(nil), im.Tags...)
		sort.Strings(tags)
		return im.Destination + "@" + im.Digest.String() + ":" + strings.Join(tags, ",")
	}
	got := map[string]bool{}
	for _, im := range rec.Images {
		got[key(im)] = true
	}
	for _, im := range want {
		if !got[key(im)] {
			return fmt.Errorf("shard %s finished with other images than plan %s gives it (it has no %s@%s): it was run with another plan; remove %s from the batch folder and run the shard again",
				rec.Part, planFile, im.Destination, im.Digest, archive.ShardRecordName(rec.Part))
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("shard %s holds %d images, plan %s gives it %d: it was run with another plan; remove %s from the batch folder and run the shard again",
			rec.Part, len(got), planFile, len(want), archive.ShardRecordName(rec.Part))
	}
	return nil
}

// diskFinish checks that every shard finished with the images the plan gives
// it, writes the catalog images and the manifests, and assembles the archive.
// While a shard has not finished it writes nothing and names the shards and
// the images they still have to write.
func (r *run) diskFinish(ctx context.Context) error {
	p := r.res.Plan
	state, shipped, buildsOn, err := r.archiveBase()
	if err != nil {
		return err
	}
	dir, batch, _, err := archive.NextBatch(r.topDir)
	if err != nil {
		return err
	}
	r.stage("verify")
	// A --finish interrupted while it renamed the chunks completes that first.
	if m, err := archive.ResumeAssembly(dir); err != nil || m != nil {
		if err != nil {
			return err
		}
		return r.finishedDisk(state, m, dir, nil, m.Failed)
	}
	shards, err := archive.ReadShards(dir)
	if err != nil {
		return err
	}
	recs, err := r.checkShards(p, shards, dir, batch, buildsOn)
	if err != nil {
		return err
	}
	elsewhere := endpoint.HeldElsewhere{}
	for _, rec := range recs {
		for _, b := range rec.Blobs {
			elsewhere[b.Digest] = ""
		}
	}
	w, err := archive.NewWriter(dir, archive.WriterOptions{
		ChunkSize: r.cfg.ArchiveSizeBytes(), Shipped: shipped, Logger: r.log, Part: archive.FinishPart, Elsewhere: elsewhere, Strict: r.opts.Archive.Strict, FreeSpace: r.opts.freeSpace, SignKey: r.opts.Archive.SignKey,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	var jobs []transfer.Job
	for _, im := range p.Images {
		if im.Kind == mirror.KindCatalog && im.Error == "" {
			jobs = append(jobs, im.Job())
		}
	}
	rep, err := r.copyJobs(ctx, &mirror.SourceMux{Default: r.srcRegistry()}, w, jobs, nil)
	if err != nil {
		return err
	}
	if failed := len(rep.Failed()); failed > 0 {
		return fmt.Errorf("%w: %d catalog image(s) failed, so no archive was written: fix the failure and run --finish again", ErrIncomplete, failed)
	}
	// What could not be planned, and what each shard could not get.
	failed := archiveFailed(p, nil)
	for _, rec := range recs {
		failed = append(failed, rec.Failed...)
	}
	switch {
	case failedCatalog(failed):
		return fmt.Errorf("%w: a catalog image could not be planned, so no archive was written: fix it and make the plan again", ErrIncomplete)
	case len(failed) > 0 && r.opts.Archive.AllOrNothing:
		return fmt.Errorf("%w: %d image(s) of the plan failed and --all-or-nothing, so no archive was written into %s (results.json lists them); without --all-or-nothing --finish writes the batch without them", ErrIncomplete, len(failed), dir)
	}
	r.stage("archive")
	cfgJSON, err := json.Marshal(r.cfg)
	if err != nil {
		return err
	}
	m, err := w.FinishSharded(ctx, archive.Meta{Batch: batch, BuildsOn: buildsOn, Config: cfgJSON, Images: archiveImages(p, failed), Catalogs: archiveCatalogs(p), Extras: append(archiveExtras(p), r.reportExtras()...), Failed: failed}, recs)
	if err != nil {
		return err
	}
	return r.finishedDisk(state, m, dir, rep, failed)
}

// finishedDisk records the assembled archive; the shards' images count as
// present (the shards wrote them) but those failed lists (a partial batch:
// ErrPartial).
func (r *run) finishedDisk(state *archive.State, m *archive.Manifest, dir string, rep *transfer.Report, failed []archive.FailedRecord) error {
	all := rep == nil // an interrupted --finish completed: everything was written before
	if all {
		rep = &transfer.Report{}
	}
	for _, im := range r.res.Plan.Images {
		if mirror.Shardable(im) || (all && im.Error == "" && im.Digest != "") {
			rep.Images = append(rep.Images, shardOutcome(im, "", failed))
		}
	}
	r.setCopy(rep)
	if err := r.archiveWritten(state, m, dir, false); err != nil {
		return err
	}
	r.res.Archive.Sharded = true
	if len(failed) > 0 {
		r.res.Archive.Failed = len(failed)
		return fmt.Errorf("%w: %d image(s) of the plan failed and are not in %s (it records them; results.json lists why); the batch holds everything else: carry it across and load it, and the next mirror-to-disk carries the failed images",
			ErrPartial, len(failed), dir)
	}
	return nil
}

// checkShards returns the records of every shard of the plan, in order, once
// each shard has finished with the images the plan gives it, for the same
// batch as this run. Otherwise it writes missing.txt and names the shards that
// did not finish and the images they still have to write.
func (r *run) checkShards(p *mirror.Plan, shards *archive.Shards, dir string, batch int, buildsOn []archive.BatchRef) ([]*archive.ShardRecord, error) {
	if len(shards.Done) == 0 {
		started := ""
		if len(shards.Started) > 0 {
			started = " (started, not finished: " + strings.Join(shards.Started, ", ") + ")"
		}
		return nil, fmt.Errorf("%w: no shard of plan %s has finished writing into %s%s, so no archive was written; run the shards (--plan %s --shard I/N), then --finish again",
			ErrIncomplete, r.opts.Run.PlanFile, dir, started, r.opts.Run.PlanFile)
	}
	n := shards.Done[0].Of
	byIndex := map[int]*archive.ShardRecord{}
	for _, rec := range shards.Done {
		if rec.Of != n {
			return nil, fmt.Errorf("%s holds shards of %d and of %d: the shards were run with different counts; remove the batch folder and run the shards of one count again", dir, n, rec.Of)
		}
		byIndex[rec.Index] = rec
	}
	part, err := mirror.PartitionPlan(p, n)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", r.opts.Run.PlanFile, err)
	}
	started := map[string]bool{}
	for _, s := range shards.Started {
		started[s] = true
	}
	var recs []*archive.ShardRecord
	var notDone, missing []string
	for i, sh := range part.Shards {
		sub := &mirror.Plan{}
		for _, k := range sh.Images {
			sub.Images = append(sub.Images, p.Images[k])
		}
		rec := byIndex[i]
		if rec == nil {
			name := archive.ShardPart(i, n)
			if started[name] {
				name += " (started, not finished)"
			} else {
				name += " (not started)"
			}
			notDone = append(notDone, name)
			for _, im := range sub.Images {
				missing = append(missing, im.Destination()+"@"+im.Digest.String()+" ("+im.Source+")")
			}
			continue
		}
		if err := sameImages(rec, archiveImages(sub, rec.Failed), r.opts.Run.PlanFile); err != nil {
			return nil, err
		}
		if rec.Batch != batch || !sameBatches(rec.BuildsOn, buildsOn) {
			return nil, fmt.Errorf("shard %s wrote batch %d building on %v; this run writes batch %d building on %v: run every shard and --finish into the same target with the same --full or --since-archive", rec.Part, rec.Batch, rec.BuildsOn, batch, buildsOn)
		}
		recs = append(recs, rec)
	}
	if len(notDone) > 0 {
		sort.Strings(missing)
		return nil, r.missingError(missing, fmt.Sprintf("are in no finished shard (not finished: %s), so no archive manifest was written into %s", strings.Join(notDone, ", "), dir))
	}
	return recs, nil
}

func sameBatches(a, b []archive.BatchRef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Batch != b[i].Batch || a[i].ArchiveID != b[i].ArchiveID {
			return false
		}
	}
	return true
}

// noShardsPending refuses an unsharded mirror-to-disk into a batch that shards
// of a sharded run are filling.
func (r *run) noShardsPending() error {
	dir, _, resume, err := archive.NextBatch(r.topDir)
	if err != nil || !resume {
		return err
	}
	s, err := archive.ReadShards(dir)
	if err != nil {
		return err
	}
	if n := len(s.Done) + len(s.Started); n > 0 {
		return fmt.Errorf("%s holds the shards of a sharded mirror-to-disk (%d finished, %d started): finish it with airlock mirror --plan FILE --finish, or remove the folder to start over", dir, len(s.Done), len(s.Started))
	}
	return nil
}
