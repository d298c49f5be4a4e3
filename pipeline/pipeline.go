// Package pipeline runs airlock's mirror command: it wires the stages of
// docs/architecture.md together (imageset → catalog fetch → prune → rebuild → plan → copy or
// archive → cluster resources) for the three workflows. Each stage lives in its
// own package; this one only sequences them and writes the run's records. It is the
// one package that holds both the catalog side (prune, fbc) and the image side
// (mirror/...); it must not know HTTP details, FBC rules or the archive format.
//
// Mirror takes Options grouped by concern (Source, Destination, Archive,
// Signatures, Network, Run, Output) whose zero value verifies TLS;
// Options.Validate refuses what cannot run, and Mirror calls it first.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/sigpolicy"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/workspace"
)

// Result is what a run did.
type Result struct {
	Workflow   mirror.Workflow `json:"workflow"`
	WorkingDir string          `json:"workingDir"`
	// ConfigPath and PlanPath are the run's -c and --plan, absolute.
	ConfigPath string           `json:"configPath,omitempty"`
	PlanPath   string           `json:"planPath,omitempty"`
	Plan       *mirror.Plan     `json:"-"`
	Copy       *transfer.Report `json:"-"`
	// Images is one line per planned image with its outcome (results.json).
	Images []ImageOutcome `json:"images"`
	// Catalogs are the mirrored catalogs.
	Catalogs []mirror.PlanCatalog `json:"catalogs"`
	// Repruned are the catalogs disk-to-mirror pruned again from the archived
	// catalog, because the configuration asks for less than the archive holds.
	Repruned []string `json:"repruned,omitempty"`
	// Failed counts images that were not mirrored.
	Failed int `json:"failed"`
	// Blocked are images blockedImages removed.
	Blocked []string `json:"blocked,omitempty"`
	// Warnings gathered along the way.
	Warnings []string `json:"warnings,omitempty"`
	// Notes are findings logged at info level, not problems (the images
	// mirrored without a signature under --signatures best-effort).
	Notes []string `json:"notes,omitempty"`
	// AlteredManifests are manifest revisions the destination stored altered
	// (changed on the way) and refused to delete: their tags were pushed
	// again and name the right manifests, but these stay readable by digest
	// until the registry's garbage collection removes them.
	AlteredManifests []registry.AlteredManifest `json:"alteredManifests,omitempty"`
	// Sources are the content sources' own summary lines (Selection.Summary).
	Sources []string `json:"sources,omitempty"`
	// Report is this run's page (working-dir/reports/report-NNNNNN.html).
	Report string `json:"report,omitempty"`
	// ClusterResources are the files written to working-dir/cluster-resources.
	ClusterResources []string `json:"clusterResources,omitempty"`
	// Batches are what --from TARGET loaded before this Result's batch.
	Batches *workspace.BatchLoadPlan `json:"batches,omitempty"`
	// PinnedConfig is the configuration pinned by digest the run wrote.
	PinnedConfig string `json:"pinnedConfig,omitempty"`
	// NothingNew is the batch holding all a mirror-to-disk run planned (none written).
	NothingNew *archive.BatchRef `json:"nothingNew,omitempty"`
	// Archive describes the archive written (mirror-to-disk).
	Archive *ArchiveSummary `json:"archive,omitempty"`
	// Signatures counts what attachment discovery found and cost.
	Signatures *signature.Stats `json:"signatures,omitempty"`
	// DryRun holds the dry run's findings.
	DryRun *transfer.Estimate `json:"dryRun,omitempty"`
	// Shard describes the shard a --shard run copied.
	Shard *ShardInfo `json:"shard,omitempty"`
	// Interrupted is true when the run was cancelled (Ctrl-C) before it finished.
	Interrupted bool `json:"interrupted,omitempty"`
	// Stats of the copy.
	BlobsSent    int64 `json:"blobsSent"`
	BlobsMounted int64 `json:"blobsMounted"`
	BlobsSkipped int64 `json:"blobsSkipped"`
	BytesSent    int64 `json:"bytesSent"`
	// BytesResumed is the part of BytesSent an interrupted run had already
	// staged (mirror-to-disk resumed those blobs with Range requests).
	BytesResumed int64 `json:"bytesResumed,omitempty"`
	// ManifestsSent counts manifests pushed (or written into the archive).
	ManifestsSent int64         `json:"manifestsSent"`
	Duration      time.Duration `json:"duration"`
}

// ImageOutcome is one image of results.json.
type ImageOutcome struct {
	Source      string           `json:"source"`
	Kind        mirror.ImageKind `json:"kind"`
	Digest      string           `json:"digest,omitempty"`
	Destination string           `json:"destination"`
	Status      string           `json:"status"`
	Error       string           `json:"error,omitempty"`
	// Hint, for a failure, is one short line: what happened and what to do;
	// Class classifies it (only a transient one may succeed when run again).
	Hint  string                `json:"hint,omitempty"`
	Class transfer.FailureClass `json:"class,omitempty"`
	// Signature is "signed" or "unsigned"; Attachments counts what was carried.
	Signature   string `json:"signature,omitempty"`
	Attachments int    `json:"attachments,omitempty"`
}

// ArchiveSummary describes a written archive.
type ArchiveSummary struct {
	// Dir is the batch folder written (TARGET/batch-NNNN).
	Dir       string `json:"dir"`
	ArchiveID string `json:"archiveID"`
	// Batch is the batch number; BuildsOn the earlier batches it relies on.
	Batch    int                `json:"batch"`
	BuildsOn []archive.BatchRef `json:"buildsOn,omitempty"`
	// Resumed is true when the run finished the batch an interrupted run began.
	Resumed     bool     `json:"resumed,omitempty"`
	Chunks      []string `json:"chunks"`
	Blobs       int      `json:"blobs"`
	Bytes       int64    `json:"bytes"`
	ReliesOn    int      `json:"reliesOn"`
	Incremental bool     `json:"incremental"`
	// Part is the shard a --shard run wrote (its chunks are not an archive
	// until --finish); Sharded is set when --finish assembled the shards.
	Part    string `json:"part,omitempty"`
	Sharded bool   `json:"sharded,omitempty"`
	// Failed counts the images a partial batch lacks (it records them).
	Failed int `json:"failed,omitempty"`
}

// ErrIncomplete is wrapped by the error Mirror returns when some images were not
// mirrored; the Result says which.
var ErrIncomplete = errors.New("not everything was mirrored")

// ErrPartial is wrapped by the error Mirror returns when it wrote a partial
// result on purpose: a mirror-to-disk batch without the images that failed
// (recorded in it), or a disk-to-mirror of such a batch. errors.Is(err,
// ErrIncomplete) holds for it too.
var ErrPartial error = partialError{}

type partialError struct{}

// errPlanIncomplete is what --plan-only returns when images could not be
// planned: nothing is mirrored by a plan, so "not everything was mirrored"
// would mislead; errors.Is(err, ErrIncomplete) holds (exit 2).
type errPlanIncomplete struct{ advice string }

func (e errPlanIncomplete) Error() string      { return "the plan is incomplete: " + e.advice }
func (errPlanIncomplete) Is(target error) bool { return target == ErrIncomplete }

func (partialError) Error() string        { return "partial result" }
func (partialError) Is(target error) bool { return target == ErrIncomplete }

// run is one run of one workflow. What its stages run beside each other (the
// registry probes, the prefetch, the dry run's reading) is not kept here: a
// stage returns it (background, transfer.Prefetch) and the orchestrator
// hands it to the stages that need it.
type run struct {
	opts Options
	log  *slog.Logger
	// warned counts the res.Warnings logged.
	warned int
	inputs
	clients
	srcs []Source // the content sources (source.go)
	res  *Result
	rep  reporter // what report.html shows (report.go)
	// wants says why each image a source names is wanted (the history);
	// the catalogs' are merged in by settleCatalogs, from catalogRecs
	// (catalogsErr: a memo's tail that could not be decoded).
	wants       map[string][]workspace.Want
	catalogRecs []catalogRecords
	catalogsErr error
	recorded    recorded // what the last run to the destination left there (recordedTags)
	// planFiles writes plan.json and mapping.txt beside the copy of a
	// mirror-to-mirror run (nil: written by plan itself); the records wait
	// for it.
	planFiles *background[struct{}]
	// resources builds and writes the cluster resources of a mirror-to-mirror
	// run beside its records (nil: none, or written by the workflow itself).
	resources *background[struct{}]
}

// inputs are what setup read from the options and the configuration: set
// once, before any stage.
type inputs struct {
	cfg *imageset.ImageSetConfiguration
	// batch, when set, replaces the configuration: an earlier batch of --from
	// TARGET, as it was made.
	batch    *imageset.ImageSetConfiguration
	workflow mirror.Workflow
	workDir  workspace.Dir // DIR/working-dir
	locks    *workspace.Runs
	topDir   string // DIR (archive target for mirror-to-disk, archive for disk-to-mirror)
	// workspace holds working-dir: the target (mirror-to-disk), --workspace
	// (mirror-to-mirror, disk-to-mirror; default workspace.DefaultName).
	workspace string
	dest      string // REGISTRY/NS for registry workflows
}

// clients are how the run reaches registries: made once each (the hosts each
// found unreachable are remembered for the whole run).
type clients struct {
	src, dst *registry.Client         // made by srcRegistry and destRegistry
	regconf  *registry.RegistriesConf // the sources' registries.conf
	policy   *sigpolicy.Checker       // --policy (nil without), opened by setup
}

// mirrorOnce runs one workflow once (Mirror calls it for each batch it loads).
func mirrorOnce(ctx context.Context, opts Options, batch *imageset.ImageSetConfiguration) (*Result, error) {
	r := &run{opts: opts, inputs: inputs{batch: batch}, log: opts.Output.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if err := r.setup(); err != nil {
		return nil, err
	}
	defer r.locks.Unlock()
	start := time.Now()
	defer r.openRunLog(start)()
	r.startRecordedTags(ctx)
	defer r.stopRecordedTags()
	defer func() { // nothing keeps writing after the run
		_, _ = r.planFiles.wait()
		_, _ = r.resources.wait()
	}()
	wctx, probes, err := r.preflight(ctx)
	if err == nil {
		switch r.workflow {
		case mirror.MirrorToMirror:
			err = r.mirrorToMirror(wctx, probes)
		case mirror.MirrorToDisk:
			err = r.mirrorToDisk(wctx, probes)
		case mirror.DiskToMirror:
			err = r.diskToMirror(wctx)
		}
		if _, perr := probes.wait(); perr != nil {
			err = perr
		}
	}
	if _, perr := probes.wait(); probes == nil || perr != nil {
		_ = r.writeReport(err) // refused: it does not replace the last report
		return nil, err
	}
	r.res.Duration = time.Since(start)
	r.res.Interrupted = ctx.Err() != nil
	if err = r.writeRecords(err); err != nil {
		return r.res, err
	}
	if r.res.Failed > 0 && r.opts.Run.PlanOnly {
		return r.res, errPlanIncomplete{r.res.unplannedAdvice(r.workDir.ResultsPath())}
	}
	if r.res.Failed > 0 {
		return r.res, fmt.Errorf("%w: %s", ErrIncomplete, r.res.failedAdvice(r.workDir.ResultsPath()))
	}
	return r.res, nil
}

func (r *run) stage(s string) {
	r.log.Debug("stage", "stage", s)
	r.rep.stage(s)
	if r.opts.Output.Stage != nil {
		r.opts.Output.Stage(s)
	}
}

// retry is --retry-times as the retry policy of every registry operation.
// stageProgress reports a counting stage (planning, the dry run, measuring)
// as Progress in images; nil when nobody listens.
func (r *run) stageProgress(stage string) transfer.StageProgress {
	if r.opts.Output.Progress == nil {
		return nil
	}
	return func(done, failed, total int) {
		r.opts.Output.Progress(Progress{Stage: stage, ImagesDone: done, ImagesFailed: failed, ImagesTotal: total})
	}
}

func (r *run) retry() *retry.Policy {
	if r.opts.retry != nil {
		return r.opts.retry
	}
	return &retry.Policy{Times: max(r.opts.Network.RetryTimes, 0), Delay: r.opts.Network.RetryDelay}
}

func (r *run) registry(insecure bool, flag, certDir string, conf *registry.RegistriesConf, keep int64) *registry.Client {
	return registry.New(registry.Options{
		AuthFile: r.opts.AuthFile, SkipTLSVerify: insecure, TLSFlag: flag, CertDir: certDir, Sources: conf,
		Retry: r.retry(), Logger: r.log, Timeouts: r.opts.timeouts, KeepManifests: keep,
	})
}

// srcRegistry and destRegistry are the run's two registry clients, made once:
// the hosts each found unreachable are remembered for the whole run.
func (r *run) srcRegistry() *registry.Client {
	if r.src == nil {
		r.src = r.registry(r.opts.Source.Insecure, "--src-tls-verify=false", r.opts.Source.CertDir, r.regconf, registry.SourceManifests)
	}
	return r.src
}

func (r *run) destRegistry() *registry.Client {
	if r.dst == nil {
		r.dst = r.registry(r.opts.Destination.Insecure, "--dest-tls-verify=false", r.opts.Destination.CertDir, nil, 0)
	}
	return r.dst
}

// sourceMux is what a run reads images from: the source registries, and the
// OCI layouts of what the sources built (mirror.LayoutRepoPrefix).
func (r *run) sourceMux() *mirror.SourceMux {
	return &mirror.SourceMux{Default: r.srcRegistry()}
}

// startPrefetch starts copying blobs while planning goes on (the copy stage
// begun early: transfer.Prefetch), for a mirror-to-mirror or mirror-to-disk
// run whose plan cannot refuse images after they were resolved (no --policy,
// signatures not required); nil otherwise. The caller stops it once the copy
// is over.
func (r *run) startPrefetch(ctx context.Context, mux *mirror.SourceMux, dst endpoint.Destination) *transfer.Prefetch {
	if o := r.opts; (r.workflow != mirror.MirrorToMirror && r.workflow != mirror.MirrorToDisk) || o.noPrefetch || o.Run.DryRun || o.Run.PlanOnly || r.policy != nil || o.Signatures.Mode == signature.Required {
		return nil
	}
	return transfer.NewPrefetch(ctx, mux, dst, r.copyOptions(nil))
}

func (r *run) mirrorToMirror(ctx context.Context, probes *background[struct{}]) error {
	switch {
	case r.opts.Run.Finish:
		return r.finish(ctx)
	case r.opts.Run.PlanFile != "":
		return r.shard(ctx)
	}
	dst := r.destRegistry()
	mux := r.sourceMux()
	pre := r.startPrefetch(ctx, mux, dst)
	defer pre.Stop()
	var est *transfer.Estimator
	if r.opts.Run.DryRun && !r.opts.Run.PlanOnly {
		// The comparison starts reading while the catalogs are rebuilt.
		est = transfer.NewEstimator(mux, dst, dryRunParallel)
	}
	looking, err := r.planSources(ctx, mux, probes, pre, est)
	if err != nil {
		return err
	}
	if r.opts.Run.PlanOnly {
		return r.recordBlobs(ctx, mux)
	}
	if r.opts.Run.DryRun {
		return r.dryRun(ctx, est, looking)
	}
	if _, err := r.copy(ctx, mux, dst, pre); err != nil {
		return err
	}
	// The cluster resources are built while the records are written.
	r.resources, err = r.startClusterResources()
	return err
}

func (r *run) setCopy(rep *transfer.Report) {
	if rep == nil {
		return
	}
	r.res.Copy = rep
	r.res.BlobsSent, r.res.BlobsMounted, r.res.BlobsSkipped, r.res.BytesSent = rep.BlobsSent, rep.BlobsMounted, rep.BlobsSkipped, rep.BytesSent
	r.res.ManifestsSent, r.res.BytesResumed = rep.ManifestsSent, rep.BytesResumed
}
