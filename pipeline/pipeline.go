// Package pipeline runs airlock's mirror command: it wires the stages of
// DESIGN.md together (imageset → catalog fetch → prune → rebuild → plan → copy or
// archive → cluster resources) for the three workflows. Each stage lives in its
// own package; this one only sequences them and writes the run's records.
package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/prune"
)

// Options are the mirror command's inputs.
type Options struct {
	// ConfigPath is the ImageSetConfiguration (-c).
	ConfigPath string
	// Destination is the positional argument: docker://REGISTRY[:PORT]/NAMESPACE
	// or file://DIR.
	Destination string
	// From is --from file://DIR (disk-to-mirror).
	From string
	// Workspace is --workspace file://DIR (mirror-to-mirror).
	Workspace string
	// DryRun plans only: mapping.txt, missing.txt and the bytes to send.
	DryRun bool
	// MaxNestedPaths is --max-nested-paths (0: no limit).
	MaxNestedPaths int
	// AuthFile is --authfile.
	AuthFile string
	// SrcTLSVerify and DestTLSVerify are --src-tls-verify and --dest-tls-verify.
	SrcTLSVerify, DestTLSVerify bool
	// ParallelImages, ParallelLayers and RetryTimes tune the copy engine.
	ParallelImages, ParallelLayers, RetryTimes int
	// SinceArchive (mirror-to-disk) ships only what the archive in that directory
	// did not carry, instead of what the workspace state says.
	SinceArchive string
	// Full (mirror-to-disk) ignores earlier archives and ships every blob.
	Full bool
	// Logger receives the run's log; nil discards it.
	Logger *slog.Logger
	// Progress receives copy progress.
	Progress func(mirror.ProgressEvent)
	// Stage, when set, is told when a stage starts ("catalogs", "plan", "copy"…).
	Stage func(stage string)
}

// Result is what a run did.
type Result struct {
	Workflow   mirror.Workflow    `json:"workflow"`
	WorkingDir string             `json:"workingDir"`
	Plan       *mirror.Plan       `json:"-"`
	Copy       *mirror.CopyReport `json:"-"`
	// Images is one line per planned image with its outcome (results.json).
	Images []ImageOutcome `json:"images"`
	// Catalogs are the mirrored catalogs.
	Catalogs []mirror.PlanCatalog `json:"catalogs"`
	// Failed counts images that were not mirrored.
	Failed int `json:"failed"`
	// Blocked are images blockedImages removed.
	Blocked []string `json:"blocked,omitempty"`
	// Warnings gathered along the way.
	Warnings []string `json:"warnings,omitempty"`
	// ClusterResources are the files written to working-dir/cluster-resources.
	ClusterResources []string `json:"clusterResources,omitempty"`
	// Archive describes the archive written (mirror-to-disk).
	Archive *ArchiveSummary `json:"archive,omitempty"`
	// DryRun holds the dry run's findings.
	DryRun *mirror.Estimate `json:"dryRun,omitempty"`
	// Stats of the copy.
	BlobsSent    int64         `json:"blobsSent"`
	BlobsMounted int64         `json:"blobsMounted"`
	BlobsSkipped int64         `json:"blobsSkipped"`
	BytesSent    int64         `json:"bytesSent"`
	Duration     time.Duration `json:"duration"`
}

// ImageOutcome is one image of results.json.
type ImageOutcome struct {
	Source      string           `json:"source"`
	Kind        mirror.ImageKind `json:"kind"`
	Digest      string           `json:"digest,omitempty"`
	Destination string           `json:"destination"`
	Status      string           `json:"status"`
	Error       string           `json:"error,omitempty"`
}

// ArchiveSummary describes a written archive.
type ArchiveSummary struct {
	Dir         string   `json:"dir"`
	ArchiveID   string   `json:"archiveID"`
	Chunks      []string `json:"chunks"`
	Blobs       int      `json:"blobs"`
	Bytes       int64    `json:"bytes"`
	ReliesOn    int      `json:"reliesOn"`
	Incremental bool     `json:"incremental"`
}

// ErrIncomplete is wrapped by the error Mirror returns when some images were not
// mirrored; the Result says which.
var ErrIncomplete = errors.New("not everything was mirrored")

type run struct {
	opts     Options
	log      *slog.Logger
	cfg      *imageset.ImageSetConfiguration
	workflow mirror.Workflow
	workDir  string // DIR/working-dir
	topDir   string // DIR (archive directory for mirror-to-disk and disk-to-mirror)
	dest     string // REGISTRY/NS for registry workflows
	res      *Result
}

// Mirror runs one mirror command: mirror-to-mirror (Destination docker:// and
// Workspace), mirror-to-disk (Destination file://) or disk-to-mirror (From and
// Destination docker://). It always returns a Result when it got as far as
// planning; the error wraps ErrIncomplete when some images failed.
func Mirror(ctx context.Context, opts Options) (*Result, error) {
	r := &run{opts: opts, log: opts.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if err := r.setup(); err != nil {
		return nil, err
	}
	start := time.Now()
	var err error
	switch r.workflow {
	case mirror.MirrorToMirror:
		err = r.mirrorToMirror(ctx)
	case mirror.MirrorToDisk:
		err = r.mirrorToDisk(ctx)
	case mirror.DiskToMirror:
		err = r.diskToMirror(ctx)
	}
	r.res.Duration = time.Since(start)
	if r.res.Plan != nil {
		if werr := r.writeResults(); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return r.res, err
	}
	if r.res.Failed > 0 {
		return r.res, fmt.Errorf("%w: %d image(s) failed, listed in %s; run the same command again to retry only what is missing", ErrIncomplete, r.res.Failed, filepath.Join(r.workDir, "results.json"))
	}
	return r.res, nil
}

func fileDir(s, flag string) (string, error) {
	p, ok := strings.CutPrefix(s, "file://")
	if !ok || p == "" {
		return "", fmt.Errorf("%s %q must be file://DIR", flag, s)
	}
	return filepath.Clean(p), nil
}

func (r *run) setup() error {
	o := r.opts
	if o.ConfigPath == "" {
		return errors.New("no ImageSetConfiguration given: use -c imageset.yaml")
	}
	cfg, err := imageset.LoadFile(o.ConfigPath)
	if err != nil {
		return err
	}
	r.cfg = cfg
	switch {
	case o.From != "":
		if o.Workspace != "" {
			return errors.New("--from and --workspace cannot be used together: --from reads an archive (disk-to-mirror), --workspace is for mirror-to-mirror")
		}
		if !strings.HasPrefix(o.Destination, "docker://") {
			return fmt.Errorf("disk-to-mirror needs a registry destination docker://REGISTRY/NAMESPACE, got %q", o.Destination)
		}
		dir, err := fileDir(o.From, "--from")
		if err != nil {
			return err
		}
		r.workflow, r.topDir = mirror.DiskToMirror, dir
		r.dest = strings.TrimPrefix(o.Destination, "docker://")
	case strings.HasPrefix(o.Destination, "file://"):
		if o.Workspace != "" {
			return errors.New("--workspace is for mirror-to-mirror; mirror-to-disk writes its working-dir inside the file:// destination")
		}
		dir, err := fileDir(o.Destination, "destination")
		if err != nil {
			return err
		}
		r.workflow, r.topDir = mirror.MirrorToDisk, dir
	case strings.HasPrefix(o.Destination, "docker://"):
		if o.Workspace == "" {
			return errors.New("mirror-to-mirror needs --workspace file://DIR for its working files (or use --from file://DIR for disk-to-mirror)")
		}
		dir, err := fileDir(o.Workspace, "--workspace")
		if err != nil {
			return err
		}
		r.workflow, r.topDir = mirror.MirrorToMirror, dir
		r.dest = strings.TrimPrefix(o.Destination, "docker://")
	default:
		return fmt.Errorf("destination %q must be docker://REGISTRY[:PORT]/NAMESPACE or file://DIR", o.Destination)
	}
	if r.workflow != mirror.MirrorToDisk && (o.SinceArchive != "" || o.Full) {
		return errors.New("--since-archive and --full apply to mirror-to-disk only")
	}
	r.workDir = filepath.Join(r.topDir, "working-dir")
	if err := os.MkdirAll(r.workDir, 0o755); err != nil {
		return fmt.Errorf("create working directory: %w", err)
	}
	r.res = &Result{Workflow: r.workflow, WorkingDir: r.workDir}
	return nil
}

func (r *run) stage(s string) {
	r.log.Info("stage", "stage", s)
	if r.opts.Stage != nil {
		r.opts.Stage(s)
	}
}

// retryTimes maps --retry-times to the engine's convention (0 there means the
// default, negative means no retries).
func (r *run) retryTimes() int {
	if r.opts.RetryTimes <= 0 {
		return -1
	}
	return r.opts.RetryTimes
}

func (r *run) registry(tlsVerify bool) *mirror.Registry {
	return mirror.NewRegistry(mirror.RegistryOptions{
		AuthFile: r.opts.AuthFile, SkipTLSVerify: !tlsVerify,
		RetryTimes: r.retryTimes(), Logger: r.log,
	})
}

func (r *run) srcRegistry() *mirror.Registry  { return r.registry(r.opts.SrcTLSVerify) }
func (r *run) destRegistry() *mirror.Registry { return r.registry(r.opts.DestTLSVerify) }

func (r *run) copyOptions() mirror.CopyOptions {
	return mirror.CopyOptions{
		ParallelImages: r.opts.ParallelImages, ParallelLayers: r.opts.ParallelLayers,
		RetryTimes: r.retryTimes(), Logger: r.log, Progress: r.opts.Progress,
	}
}

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
	fo := mirror.NewFetchOptions(r.opts.AuthFile, r.opts.SrcTLSVerify, r.log)
	fo.Retry.Times = max(r.retryTimes(), 0)
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

func (r *run) plan(ctx context.Context, src *mirror.Registry, cats []mirror.CatalogRequest) error {
	r.stage("plan")
	req := mirror.PlanRequest{
		Workflow: r.workflow, Destination: r.dest, MaxNestedPaths: r.opts.MaxNestedPaths,
		Catalogs: cats, Additional: r.additional(), Blocked: r.blocked(),
	}
	p, err := mirror.NewPlan(ctx, req, src, 16)
	if err != nil {
		return err
	}
	r.setPlan(p)
	return r.writePlan()
}

func (r *run) setPlan(p *mirror.Plan) {
	r.res.Plan = p
	r.res.Catalogs = p.Catalogs
	r.res.Blocked = p.Blocked
	r.res.Warnings = append(r.res.Warnings, p.Warnings...)
	for _, w := range r.res.Warnings {
		r.log.Warn(w)
	}
}

func (r *run) mirrorToMirror(ctx context.Context) error {
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
	dst := r.destRegistry()
	if r.opts.DryRun {
		return r.dryRun(ctx, mux, dst)
	}
	r.stage("copy")
	rep, err := mirror.Copy(ctx, mux, dst, r.res.Plan.Jobs(), r.copyOptions())
	r.setCopy(rep)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	_ = err // failures are in the report
	return r.clusterResources()
}

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
	rep, _ := mirror.Copy(ctx, mux, w, r.res.Plan.Jobs(), r.copyOptions())
	r.setCopy(rep)
	if ctx.Err() != nil {
		return ctx.Err()
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
	rep, _ := mirror.Copy(ctx, ar, dst, p.Jobs(), r.copyOptions())
	r.setCopy(rep)
	if ctx.Err() != nil {
		return ctx.Err()
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

func (r *run) setCopy(rep *mirror.CopyReport) {
	if rep == nil {
		return
	}
	r.res.Copy = rep
	r.res.BlobsSent, r.res.BlobsMounted, r.res.BlobsSkipped, r.res.BytesSent = rep.BlobsSent, rep.BlobsMounted, rep.BlobsSkipped, rep.BytesSent
}

func (r *run) dryRun(ctx context.Context, src mirror.EstimateSource, dst mirror.EstimateDestination) error {
	r.stage("dry-run")
	est, err := mirror.EstimatePlan(ctx, src, dst, r.res.Plan.Jobs(), 8)
	if err != nil {
		return err
	}
	r.res.DryRun = est
	dir := filepath.Join(r.workDir, "dry-run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(dir, "mapping.txt"), r.res.Plan.Mapping()); err != nil {
		return err
	}
	var miss []string
	for _, j := range est.Missing {
		miss = append(miss, j.Source+"@"+j.Digest.String()+"="+j.Dest)
	}
	sort.Strings(miss)
	if err := writeLines(filepath.Join(dir, "missing.txt"), miss); err != nil {
		return err
	}
	if r.workflow != mirror.MirrorToDisk {
		return r.clusterResources()
	}
	return nil
}

// writePlan writes plan.json and mapping.txt.
func (r *run) writePlan() error {
	b, err := json.MarshalIndent(r.res.Plan, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(r.workDir, "plan.json"), append(b, '\n')); err != nil {
		return err
	}
	return writeLines(filepath.Join(r.workDir, "mapping.txt"), r.res.Plan.Mapping())
}

// writeResults fills Result.Images from the plan and the copy report and writes
// results.json.
func (r *run) writeResults() error {
	status := map[string]mirror.ImageResult{}
	if r.res.Copy != nil {
		for _, ir := range r.res.Copy.Images {
			status[ir.Job.Dest+"@"+ir.Job.Digest.String()] = ir
		}
	}
	r.res.Images = nil
	r.res.Failed = 0
	for _, im := range r.res.Plan.Images {
		out := ImageOutcome{Source: im.Source, Kind: im.Kind, Digest: im.Digest.String(), Destination: im.Destination()}
		switch {
		case im.Error != "":
			out.Status, out.Error = mirror.StatusFailed, im.Error
		case r.res.Copy == nil:
			out.Status = "planned"
		default:
			if ir, ok := status[im.DestRepo+"@"+im.Digest.String()]; ok {
				out.Status, out.Error = ir.Status, ir.Err
			} else {
				out.Status = "not run"
			}
		}
		if out.Status == mirror.StatusFailed || out.Status == "not run" {
			r.res.Failed++
		}
		r.res.Images = append(r.res.Images, out)
	}
	b, err := json.MarshalIndent(r.res, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(r.workDir, "results.json"), append(b, '\n'))
}

// clusterResources writes working-dir/cluster-resources from what was mirrored.
func (r *run) clusterResources() error {
	r.stage("cluster-resources")
	ok := map[string]bool{}
	if r.res.Copy != nil {
		for _, ir := range r.res.Copy.Images {
			if ir.Status != mirror.StatusFailed {
				ok[ir.Job.Dest+"@"+ir.Job.Digest.String()] = true
			}
		}
	}
	var images []manifests.Image
	var catalogs []manifests.Catalog
	templates := map[string]string{}
	for _, op := range r.cfg.Mirror.Operators {
		templates[op.Catalog] = op.TargetCatalogSourceTemplate
	}
	for _, im := range r.res.Plan.Images {
		if im.Error != "" {
			continue
		}
		if r.res.Copy != nil && !ok[im.DestRepo+"@"+im.Digest.String()] {
			continue
		}
		if im.Kind == mirror.KindCatalog {
			continue
		}
		images = append(images, manifests.Image{
			Source: im.Source, Destination: im.Destination(), Digest: im.Digest.String(), Kind: manifests.Kind(im.Kind),
		})
	}
	catalogOK := map[string]bool{}
	for _, im := range r.res.Plan.Images {
		if im.Kind == mirror.KindCatalog && im.Error == "" && (r.res.Copy == nil || ok[im.DestRepo+"@"+im.Digest.String()]) {
			catalogOK[im.Source] = true
		}
	}
	for _, c := range r.res.Plan.Catalogs {
		if c.DestRepo == "" || !catalogOK[c.Catalog] {
			// Not mirrored: a CatalogSource would point at nothing.
			continue
		}
		mc := manifests.Catalog{Source: c.Catalog, Destination: c.DestRepo + ":" + c.Tag, Digest: c.Digest.String()}
		if t := templates[c.Catalog]; t != "" {
			path := t
			if !filepath.IsAbs(path) && r.cfg.Source != "" {
				path = filepath.Join(filepath.Dir(r.cfg.Source), path)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("targetCatalogSourceTemplate of catalog %s: %w", c.Catalog, err)
			}
			mc.Template, mc.TemplatePath = b, path
		}
		catalogs = append(catalogs, mc)
	}
	set, err := manifests.Build(images, catalogs, manifests.Options{RepositoryScope: r.opts.MaxNestedPaths > 0})
	if err != nil {
		return err
	}
	dir := filepath.Join(r.workDir, "cluster-resources")
	if err := set.Write(dir); err != nil {
		return err
	}
	r.res.ClusterResources = nil
	for _, f := range set.Files() {
		r.res.ClusterResources = append(r.res.ClusterResources, filepath.Join(dir, f.Name))
	}
	return nil
}

func writeLines(path string, lines []string) error {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return writeFile(path, []byte(b.String()))
}

// writeFile writes atomically (temp file, rename) so an interrupted run never
// leaves a half-written record.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
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
