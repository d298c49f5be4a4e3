package pipeline

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/workspace"
)

// ImageCounts sorts the planned images by outcome.
type ImageCounts struct {
	Planned int `json:"planned"`
	// Copied were sent (mirror-to-mirror, disk-to-mirror) or downloaded into the
	// archive (mirror-to-disk).
	Copied int `json:"copied"`
	// Present were already at the destination (or already staged in the batch
	// by an interrupted run).
	Present int `json:"present"`
	Failed  int `json:"failed"`
	// NotDone were not finished because the run was interrupted.
	NotDone int `json:"notDone"`
	Blocked int `json:"blocked"`
}

// Counts returns the images by outcome.
func (r *Result) Counts() ImageCounts {
	c := ImageCounts{Planned: len(r.Images), Blocked: len(r.Blocked)}
	for _, im := range r.Images {
		switch {
		case im.Status == transfer.StatusCopied:
			c.Copied++
		case im.Status == transfer.StatusSkipped:
			c.Present++
		case r.Interrupted && notFinished(im):
			c.NotDone++
		case im.Status == transfer.StatusFailed, im.Status == workspace.StatusNotRun:
			c.Failed++
		}
	}
	return c
}

// notFinished reports whether an image failed only because the run was interrupted.
func notFinished(im ImageOutcome) bool {
	return im.Status == workspace.StatusNotRun || strings.Contains(im.Error, "context canceled") || strings.HasPrefix(im.Error, "not started")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// joinNonEmpty joins the non-empty parts with ", ".
func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

func when(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// WriteSummary writes what the run did for a person: only what happened, in the
// words of its workflow, and nothing about what does not exist.
func (r *Result) WriteSummary(w io.Writer) {
	c := r.Counts()
	title := string(r.Workflow) + " summary"
	switch {
	case r.DryRun != nil:
		title = string(r.Workflow) + " dry run summary (nothing was copied)"
	case r.Interrupted:
		title = string(r.Workflow) + " summary: interrupted"
	}
	fmt.Fprintf(w, "\n%s\n", title)
	if r.writeNothingNew(w) {
		return
	}
	r.Batches.WriteSummary(w)
	copied, present := "copied", "already at the destination"
	if r.Workflow == mirror.MirrorToDisk {
		copied, present = "downloaded into the archive", "already staged in this batch by an interrupted run"
		switch a := r.Archive; {
		case a != nil && a.Part != "":
			present = "already written by an earlier run of this shard"
		case a != nil && a.Sharded:
			present = "written by the shards"
		}
	}
	if d := r.DryRun; d != nil && r.Workflow == mirror.MirrorToDisk {
		fmt.Fprintf(w, "  images:    %d planned: %s\n", c.Planned, joinNonEmpty(
			fmt.Sprintf("%d would go into the next batch", len(d.Missing)-len(d.Unreadable)),
			when(c.Failed-len(d.Unreadable) > 0, fmt.Sprintf("%d cannot be planned", c.Failed-len(d.Unreadable))),
			when(len(d.Unreadable) > 0, fmt.Sprintf("%d cannot be read at the source", len(d.Unreadable))),
			when(c.Blocked > 0, fmt.Sprintf("%d blocked", c.Blocked))))
		fmt.Fprintf(w, "  blobs:     would download %d of %d blobs (%s of %s)%s\n", d.MissingBlobs, d.Blobs,
			humanize.Bytes(d.BytesToSend), humanize.Bytes(d.Bytes),
			when(d.Blobs > d.MissingBlobs, fmt.Sprintf("; %d were shipped by earlier batches", d.Blobs-d.MissingBlobs)))
	} else if d != nil {
		fmt.Fprintf(w, "  images:    %d planned: %s\n", c.Planned, joinNonEmpty(
			fmt.Sprintf("would copy %d", len(d.Missing)-len(d.Unreadable)),
			when(c.Planned-len(d.Missing)-(c.Failed-len(d.Unreadable)) > 0, fmt.Sprintf("%d already at the destination", c.Planned-len(d.Missing)-(c.Failed-len(d.Unreadable)))),
			when(c.Failed-len(d.Unreadable) > 0, fmt.Sprintf("%d cannot be planned", c.Failed-len(d.Unreadable))),
			when(len(d.Unreadable) > 0, fmt.Sprintf("%d cannot be read at the source", len(d.Unreadable))),
			when(c.Blocked > 0, fmt.Sprintf("%d blocked", c.Blocked))))
		fmt.Fprintf(w, "  blobs:     would send %d of %d blobs (%s of %s)\n", d.MissingBlobs, d.Blobs, humanize.Bytes(d.BytesToSend), humanize.Bytes(d.Bytes))
	} else {
		fmt.Fprintf(w, "  images:    %d planned: %s\n", c.Planned, joinNonEmpty(
			when(c.Copied > 0 || (c.Present == 0 && c.NotDone == 0), fmt.Sprintf("%d %s", c.Copied, copied)),
			when(c.Present > 0, fmt.Sprintf("%d %s", c.Present, present)),
			when(c.NotDone > 0, fmt.Sprintf("%d not done", c.NotDone)),
			when(c.Failed > 0, fmt.Sprintf("%d failed", c.Failed)),
			when(c.Blocked > 0, fmt.Sprintf("%d blocked", c.Blocked))))
		if r.Copy != nil && r.BlobsSent+r.BlobsMounted > 0 {
			if r.Workflow == mirror.MirrorToDisk {
				fmt.Fprintf(w, "  blobs:     %s downloaded (%s)\n", plural(int(r.BlobsSent), "blob", "blobs"), humanize.Bytes(r.BytesSent)+r.resumedNote())
			} else {
				fmt.Fprintf(w, "  blobs:     %s\n", joinNonEmpty(
					fmt.Sprintf("%d sent (%s)", r.BlobsSent, humanize.Bytes(r.BytesSent)+r.resumedNote()),
					when(r.BlobsMounted > 0, fmt.Sprintf("%d mounted from another repository", r.BlobsMounted)),
					when(r.BlobsSkipped > 0, fmt.Sprintf("%d already there", r.BlobsSkipped)),
					fmt.Sprintf("%d manifests and tags pushed", r.ManifestsSent)))
			}
		}
	}
	r.writeAltered(w)
	for _, cat := range r.Catalogs {
		state := "rebuilt"
		switch {
		case slices.Contains(r.Repruned, cat.Catalog):
			state = "pruned again from the archived catalog to this configuration"
		case !cat.Rebuilt:
			state = "untouched"
		}
		fmt.Fprintf(w, "  catalog:   %s -> %s:%s (%s, %s)\n", cat.Catalog, cat.DestRepo, cat.Tag, state, shortDigest(cat.Digest.String()))
	}
	r.writeKinds(w)
	for _, l := range r.Sources {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if a := r.Archive; a != nil && a.Part != "" {
		fmt.Fprintf(w, "  shard:     %s wrote %s, %s (%s) into %s%s\n", a.Part, plural(len(a.Chunks), "chunk", "chunks"),
			plural(a.Blobs, "blob", "blobs"), humanize.Bytes(a.Bytes), a.Dir,
			when(a.Failed > 0, fmt.Sprintf("; partial: without %s that failed (its record lists them; the next mirror-to-disk carries them)", plural(a.Failed, "image", "images"))))
		fmt.Fprintf(w, "  next:      once every shard has finished: airlock mirror -c %s --plan %s --finish %s\n", shq(r.ConfigPath), shq(r.PlanPath), shq(location.File(absOrSame(filepath.Dir(a.Dir))).String()))
	} else if a != nil {
		kind := "full"
		if a.Incremental {
			var on []string
			for _, b := range a.BuildsOn {
				on = append(on, b.String())
			}
			kind = fmt.Sprintf("incremental: builds on %s, which must be loaded first; %d blobs it needs were shipped by them", strings.Join(on, ", "), a.ReliesOn)
		}
		resumed := ""
		if a.Resumed {
			resumed = ", finished the batch an interrupted run began"
		}
		if a.Failed > 0 {
			resumed += fmt.Sprintf("; partial: it lacks %s that failed (it records them; the next batch carries them)", plural(a.Failed, "image", "images"))
		}
		fmt.Fprintf(w, "  archive:   %s: batch %d, archive ID %s, %s, %s (manifests included), %s (%s%s)\n", a.Dir, a.Batch, a.ArchiveID, plural(len(a.Chunks), "chunk", "chunks"),
			plural(a.Blobs, "blob", "blobs"), humanize.Bytes(a.Bytes), kind, resumed)
		fmt.Fprintf(w, "  next:      carry %s across and load it with (REGISTRY/NAMESPACE: your mirror; batches in order, each once):\n             airlock mirror -c %s --from %s docker://REGISTRY/NAMESPACE\n", filepath.Base(a.Dir), shq(r.ConfigPath), shq(location.File(absOrSame(a.Dir)).String()))
	} else if r.Workflow == mirror.MirrorToDisk && r.DryRun == nil {
		fmt.Fprintf(w, "  archive:   not written; run the same command again to finish the unfinished batch\n")
	}
	if len(r.ClusterResources) > 0 {
		dir := workspace.Dir(r.WorkingDir).ClusterResourcesDir()
		fmt.Fprintf(w, "  cluster resources (oc apply -f %s):\n", dir)
		for _, f := range r.ClusterResources {
			// Relative to the folder: the ICSPs are in icsp/ (oc apply -R, or
			// oc apply -f DIR/icsp on clusters older than 4.13).
			rel, err := filepath.Rel(dir, f)
			if err != nil || strings.HasPrefix(rel, "..") {
				rel = filepath.Base(f)
			}
			fmt.Fprintf(w, "    %s\n", filepath.ToSlash(rel))
		}
	}
	if r.DryRun != nil {
		fmt.Fprintf(w, "  files:     %s, %s\n", workspace.Dir(r.WorkingDir).DryRunMappingPath(), workspace.MissingFile)
	}
	r.writeRecords(w)
	if r.Workflow == mirror.DiskToMirror {
		fmt.Fprintf(w, "  workspace: %s (working files; nothing was written into the archive folder)\n", workspace.Dir(r.WorkingDir).Workspace())
	}
	if c.Failed > 0 {
		fmt.Fprintf(w, "  failed:\n")
		n := 0
		for _, im := range r.Images {
			if (im.Status == transfer.StatusFailed || im.Status == workspace.StatusNotRun) && !(r.Interrupted && notFinished(im)) {
				if n++; n > 20 {
					fmt.Fprintf(w, "    … and %d more in %s\n", c.Failed-20, workspace.Dir(r.WorkingDir).ResultsPath())
					break
				}
				fmt.Fprintf(w, "    %s: %s\n", im.Source, im.shortReason())
			}
		}
	}
}

// writeKinds writes a line for each kind of content beyond catalogs,
// operator images and additional images (whose lines above say enough):
// how many images of it the run planned and how many failed.
func (r *Result) writeKinds(w io.Writer) {
	planned, failed := map[mirror.ImageKind]int{}, map[mirror.ImageKind]int{}
	var kinds []mirror.ImageKind
	for _, im := range r.Images {
		switch im.Kind {
		case mirror.KindCatalog, mirror.KindOperator, mirror.KindGeneric, mirror.KindAttachment:
			continue
		}
		if planned[im.Kind]++; planned[im.Kind] == 1 {
			kinds = append(kinds, im.Kind)
		}
		if im.Status == transfer.StatusFailed || im.Status == workspace.StatusNotRun {
			failed[im.Kind]++
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "  %-10s %s%s\n", string(k)+":", plural(planned[k], "image", "images"), when(failed[k] > 0, fmt.Sprintf(", %d failed", failed[k])))
	}
}

// writeRecords writes the summary lines naming the run's pinned configuration
// (if any), results file and report (if any).
func (r *Result) writeRecords(w io.Writer) {
	if r.PinnedConfig != "" {
		fmt.Fprintf(w, "  pinned:    %s (this configuration pinned by digest: mirror -c it to select exactly the same images)\n", r.PinnedConfig)
	}
	fmt.Fprintf(w, "  records:   %s\n", workspace.Dir(r.WorkingDir).ResultsPath())
	if r.Report != "" {
		fmt.Fprintf(w, "  report:    %s\n", r.Report)
	}
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// shq quotes s for a POSIX shell when it needs it, so that suggested commands paste.
func shq(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@,+-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxReason bounds a failure's line in the summary: the detail is in the log
// and results.json.
const maxReason = 240

// shortReason is the failure's one line: its hint, else its error cut short.
func (o ImageOutcome) shortReason() string {
	if o.Hint != "" {
		return o.Hint
	}
	if len(o.Error) > maxReason {
		return o.Error[:maxReason] + "… (the log and results.json have the rest)"
	}
	return o.Error
}

// unplannedAdvice says, for --plan-only, how many images could not be
// planned and what follows: the shards copy the rest, --finish records these
// as missing in the batch, and a new plan once they are fixed carries them.
func (r *Result) unplannedAdvice(results string) string {
	return fmt.Sprintf("%d image(s) could not be planned, listed in %s with why; the shards copy the rest and --finish records these as missing in the batch (fix them and make the plan again to carry them)", r.Failed, results)
}

// failedAdvice says how many images failed, where they are listed, and what
// to do: run the same command again when every failure is transient, change
// what the failures name first otherwise.
func (r *Result) failedAdvice(results string) string {
	transient, diskFull := 0, false
	for _, im := range r.Images {
		if im.Status != transfer.StatusFailed && im.Status != workspace.StatusNotRun {
			continue
		}
		if im.Class.Transient() || im.Status == workspace.StatusNotRun {
			transient++
		}
		diskFull = diskFull || im.Class == transfer.ClassDiskFull
	}
	switch {
	case diskFull:
		return fmt.Sprintf("the disk is full: %d image(s) failed, listed in %s; free space on it (or write to another disk), then run the same command again", r.Failed, results)
	case transient == r.Failed:
		return fmt.Sprintf("%d image(s) failed on network or registry errors, listed in %s; run the same command again to retry only what is missing", r.Failed, results)
	case transient == 0:
		return fmt.Sprintf("%d image(s) failed, listed in %s with what to change for each (running again alone will not help)", r.Failed, results)
	default:
		return fmt.Sprintf("%d image(s) failed, listed in %s: %d on network or registry errors (running again retries them), %d need a change first (see each one's line)", r.Failed, results, transient, r.Failed-transient)
	}
}
