package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/prune"
	"github.com/airlock-mirror/airlock/prune/graph"
	"github.com/airlock-mirror/airlock/report"
	"github.com/airlock-mirror/airlock/workspace"
)

// maxGraphs is the most packages of one catalog the report draws: a catalog
// mirrored heads-only keeps every package, whose pictures would not help.
const maxGraphs = 40

// reporter collects, along the run, what working-dir/report.html shows.
type reporter struct {
	catalogs []*report.Catalog
	// archived is the per-catalog view a loaded batch carries (disk-to-mirror).
	archived map[string]*report.Catalog
	stages   []report.Stage
	current  time.Time
	// pictures are the content sources' (Selection.Pictures).
	pictures []report.Picture
}

// stage closes the running stage and starts s.
func (rp *reporter) stage(s string) {
	rp.endStage()
	rp.stages = append(rp.stages, report.Stage{Name: s})
	rp.current = time.Now()
}

func (rp *reporter) endStage() {
	if n := len(rp.stages); n > 0 && !rp.current.IsZero() {
		rp.stages[n-1].Duration = time.Since(rp.current)
		rp.current = time.Time{}
	}
}

// recordCatalog keeps what a catalog's filter kept and why, with the upgrade
// graphs of the kept packages drawn from the source catalog src.
func (r *run) recordCatalog(ctx context.Context, op imageset.Operator, src, kept *fbc.Catalog, expl *prune.Explanation) {
	rc := &report.Catalog{Source: op.Catalog, Full: op.IsFullCatalog()}
	images := map[string][]string{}
	uses, _ := fbc.Images(kept)
	for _, u := range uses {
		seen := map[string]bool{}
		for _, b := range u.Bundles {
			if !seen[b.Package] {
				seen[b.Package] = true
				images[b.Package] = append(images[b.Package], u.Image)
			}
		}
	}
	draw := expl != nil && (len(op.Packages) > 0 || len(expl.Packages) <= maxGraphs)
	for _, p := range kept.Packages {
		rp := &report.Package{Name: p.Name, DefaultChannel: p.DefaultChannel, Images: images[p.Name]}
		if pe := expl.Package(p.Name); pe != nil {
			rp.Dependency, rp.Channels, rp.Bundles, rp.Dropped = pe.Dependency, pe.Channels, pe.Bundles, pe.Dropped
		}
		if draw && len(rc.Packages) < maxGraphs {
			if g, err := graph.Build(src, graph.Options{Package: p.Name, Explanation: expl}); err == nil {
				var svg bytes.Buffer
				if err := g.Write(ctx, &svg, graph.FormatSVG); err == nil {
					rp.Graph = svg.String()
				} else {
					r.log.Warn("report: cannot draw the upgrade graph", "package", p.Name, "error", err)
				}
			}
		}
		rc.Packages = append(rc.Packages, rp)
	}
	if expl != nil {
		rc.Warnings = expl.Warnings
	}
	r.rep.catalogs = append(r.rep.catalogs, rc)
}

// sourceReport is a source with a section of its own in the report (the
// charts of mirror.helm): Report adds it once out's images are filled.
type sourceReport interface {
	Report(out *report.Run)
}

// writeReport writes working-dir/report.json and report.html from the run's
// records; runErr is the error the run ends with.
func (r *run) writeReport(runErr error) error {
	serr := r.settleCatalogs()
	if runErr == nil {
		runErr = serr
	}
	x, err := r.renderReport(runErr)
	if err != nil {
		return err
	}
	if err := r.saveReport(x); err != nil {
		return err
	}
	return serr
}

// renderReport makes the run's report (report.Render) from its records;
// runErr is the error the run ends with. It reads the run and changes
// nothing other records read (saveReport names the page in the Result).
func (r *run) renderReport(runErr error) (*report.Rendered, error) {
	r.rep.endStage()
	res := r.res
	out := &report.Run{
		Workflow: string(r.workflow), Destination: r.dest, ConfigPath: r.opts.ConfigPath, Duration: res.Duration,
		Stages: r.rep.stages, Blocked: slices.Clone(res.Blocked), Warnings: res.Warnings, Sources: res.Sources, Pictures: r.rep.pictures,
		BytesSent: res.BytesSent, BlobsSent: res.BlobsSent, BlobsMounted: res.BlobsMounted, BlobsSkipped: res.BlobsSkipped,
		BytesResumed: res.BytesResumed,
	}
	for _, a := range res.AlteredManifests {
		out.Altered, out.GC = append(out.Altered, report.Altered{Repository: a.Repository, Digest: a.Digest.String()}), gcAdvice
	}
	if runErr != nil {
		out.Error, out.Refused = runErr.Error(), res.Plan == nil
	}
	if b, err := os.ReadFile(r.opts.ConfigPath); err == nil {
		out.Config = string(b)
	}
	sent := map[string]int64{}
	if res.Copy != nil {
		for _, ir := range res.Copy.Images {
			sent[ir.Job.Dest+"@"+ir.Job.Digest.String()] += ir.BytesSent
		}
	}
	byCatalog := map[string]*report.Catalog{}
	for _, c := range r.rep.catalogs {
		byCatalog[c.Source] = c
	}
	if res.Plan != nil {
		for i, im := range res.Plan.Images {
			ri := report.Image{Source: im.Source, Kind: string(im.Kind), Digest: im.Digest.String(), Destination: im.Destination(),
				DestRepo: im.DestRepo, Origins: im.Origins, Bytes: sent[im.DestRepo+"@"+im.Digest.String()], Signature: im.Signature, Attachments: im.Attachments}
			if i < len(res.Images) {
				ri.Status, ri.Error = res.Images[i].Status, res.Images[i].Error
			}
			out.Images = append(out.Images, ri)
		}
		for _, pc := range res.Plan.Catalogs {
			c := byCatalog[pc.Catalog]
			if c == nil { // disk-to-mirror: what the archive recorded
				if c = r.archivedCatalogReport(pc.Catalog, pc.Packages); c == nil {
					c = &report.Catalog{Source: pc.Catalog}
					for _, p := range pc.Packages {
						c.Packages = append(c.Packages, &report.Package{Name: p})
					}
				}
				r.rep.catalogs = append(r.rep.catalogs, c)
			}
			c.SourceDigest, c.Digest, c.Rebuilt = pc.SourceDigest.String(), pc.Digest.String(), pc.Rebuilt
			if pc.DestRepo != "" {
				c.Destination = pc.DestRepo + ":" + pc.Tag
			}
		}
	}
	out.Catalogs = r.rep.catalogs
	for _, s := range r.sources() {
		if sr, ok := s.(sourceReport); ok {
			sr.Report(out)
		}
	}
	if a := res.Archive; a != nil {
		out.Archive = &report.Archive{Dir: a.Dir, ID: a.ArchiveID, Chunks: a.Chunks, Blobs: a.Blobs, Bytes: a.Bytes, ReliesOn: a.ReliesOn, Incremental: a.Incremental}
	}
	return report.Render(out)
}

// saveReport writes the rendered report as the run's own (working-dir/reports)
// and as working-dir/report.json and report.html, and names the page in the
// Result.
func (r *run) saveReport(x *report.Rendered) error {
	data, html, err := r.workDir.RunReport()
	if err != nil {
		return err
	}
	r.res.Report = html
	return x.SaveRun(report.Files{Data: data, HTML: html}, report.Files{Data: r.workDir.ReportDataPath(), HTML: r.workDir.ReportHTMLPath()})
}

// RegenerateReport writes report.html again from the report.json of dir, which
// is a working directory or the directory holding one (the mirror destination
// or workspace) (airlock report). It returns the path of the page.
func RegenerateReport(dir string) (string, error) {
	wd := workspace.Dir(dir)
	if _, err := os.Stat(wd.ReportDataPath()); errors.Is(err, fs.ErrNotExist) {
		wd = workspace.At(dir)
	}
	_, err := os.Stat(wd.ReportDataPath())
	if err == nil {
		// Shared: a run holding the workspace would write report.html too.
		l, lerr := wd.Lock(false, nil)
		if lerr != nil {
			return "", lerr
		}
		defer l.Unlock()
		err = report.Regenerate(wd.ReportDataPath(), wd.ReportHTMLPath())
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s has no %s (nor %s/%s): pass the directory of a mirror run (its file:// destination or --workspace) after airlock mirror has run there", dir, workspace.ReportDataFile, workspace.WorkingDirName, workspace.ReportDataFile)
	}
	if err != nil {
		return "", err
	}
	return wd.ReportHTMLPath(), nil
}
