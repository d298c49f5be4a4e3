// Package report writes the self-contained HTML report of a mirror run
// (working-dir/report.html): the configuration, per catalog and package what was
// kept and why with the upgrade graphs inline, images and bytes per package and
// per destination repository, failures, timings per stage and, for
// mirror-to-disk, what the archive holds. The pipeline fills a Run as it goes and
// saves it as working-dir/report.json, from which `airlock report DIR` writes
// the HTML again. The page loads nothing: no script, font, stylesheet or image
// comes from anywhere else, so it opens inside the air gap.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/prune"
)

// Run is everything the report shows about one run.
type Run struct {
	Workflow    string `json:"workflow"`
	Destination string `json:"destination,omitempty"`
	ConfigPath  string `json:"configPath"`
	// Config is the ImageSetConfiguration as the run read it.
	Config   string        `json:"config"`
	Duration time.Duration `json:"duration"`
	// Error is the error the run ended with, if any.
	Error string `json:"error,omitempty"`
	// Refused is set when the run stopped with an error before it planned
	// anything (a preflight failure, an archive refused): it copied nothing,
	// and its report does not replace the last one (SaveRun).
	Refused  bool       `json:"refused,omitempty"`
	Stages   []Stage    `json:"stages"`
	Catalogs []*Catalog `json:"catalogs"`
	// Charts are the Helm charts of the run (mirror.helm).
	Charts   []Chart  `json:"charts,omitempty"`
	Images   []Image  `json:"images"`
	Blocked  []string `json:"blocked,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Sources are the content sources' own lines (a release each, with
	// its payload, components and signatures; the risks on the chosen path).
	Sources []string `json:"sources,omitempty"`
	// Pictures are the content sources' pictures (a release channel's
	// update graph with the chosen versions and path), as SVG.
	Pictures []Picture `json:"pictures,omitempty"`
	Archive  *Archive  `json:"archive,omitempty"`
	// BytesSent counts the blob bytes transferred.
	BytesSent    int64 `json:"bytesSent"`
	BlobsSent    int64 `json:"blobsSent"`
	BlobsMounted int64 `json:"blobsMounted"`
	BlobsSkipped int64 `json:"blobsSkipped"`
	// BytesResumed is the part of BytesSent an interrupted run had already
	// transferred: resumed, not fetched again.
	BytesResumed int64 `json:"bytesResumed,omitempty"`
	// Altered are manifest revisions the destination stored altered on the
	// way and refused to delete: readable by digest until its garbage
	// collection removes them (GC says how).
	Altered []Altered `json:"alteredManifests,omitempty"`
	GC      string    `json:"gc,omitempty"`
}

// Altered is one manifest revision a destination keeps altered.
type Altered struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
}

// Stage is one stage of the run and how long it took.
type Stage struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration"`
}

// Catalog is one operator catalog of the run.
type Catalog struct {
	Source       string `json:"source"`
	SourceDigest string `json:"sourceDigest,omitempty"`
	Destination  string `json:"destination,omitempty"`
	Digest       string `json:"digest,omitempty"`
	Rebuilt      bool   `json:"rebuilt"`
	// Full is true when the catalog was mirrored whole (full: true, no packages).
	Full     bool       `json:"full,omitempty"`
	Packages []*Package `json:"packages"`
	Warnings []string   `json:"warnings,omitempty"`
}

// Package is one kept package of a catalog.
type Package struct {
	Name           string                     `json:"name"`
	DefaultChannel string                     `json:"defaultChannel,omitempty"`
	Dependency     bool                       `json:"dependency,omitempty"`
	Channels       []prune.ChannelExplanation `json:"channels,omitempty"`
	Bundles        []prune.BundleExplanation  `json:"bundles,omitempty"`
	Dropped        []prune.DroppedChannel     `json:"droppedChannels,omitempty"`
	// Images are the images the kept bundles use, sorted.
	Images []string `json:"images,omitempty"`
	// Graph is the SVG picture of the package's upgrade graphs ("" when not drawn).
	Graph string `json:"graph,omitempty"`
}

// Chart is one Helm chart of the run: its artifact in the mirror and the
// images its rendered objects name, each with where in the chart.
type Chart struct {
	Repository string `json:"repository"`
	Chart      string `json:"chart"`
	Version    string `json:"version"`
	// Artifact is the chart's OCI artifact at the destination; Status what
	// became of it, Error why (or why the chart could not be read).
	Artifact string       `json:"artifact,omitempty"`
	Status   string       `json:"status,omitempty"`
	Error    string       `json:"error,omitempty"`
	Images   []ChartImage `json:"images,omitempty"`
}

// ChartImage is one image a chart names.
type ChartImage struct {
	Image       string `json:"image"`
	Destination string `json:"destination,omitempty"`
	Status      string `json:"status,omitempty"`
	// Where are the places in the rendered chart that name it
	// ("templates/cron.yaml CronJob x .spec.jobTemplate.spec…image").
	Where []string `json:"where,omitempty"`
}

// Failed reports whether the image was not mirrored.
func (c ChartImage) Failed() bool { return c.Status == "failed" || c.Status == "not run" }

// Image is one planned image and what became of it.
type Image struct {
	Source      string   `json:"source"`
	Kind        string   `json:"kind"`
	Digest      string   `json:"digest,omitempty"`
	Destination string   `json:"destination"`
	DestRepo    string   `json:"destRepo"`
	Origins     []string `json:"origins,omitempty"`
	Status      string   `json:"status"`
	Error       string   `json:"error,omitempty"`
	// Bytes counts the blob bytes sent for the image (blobs already at the
	// destination or shared with an image copied earlier count zero).
	Bytes int64 `json:"bytes"`
	// Signature is "signed" or "unsigned" when attachments were looked for
	// ("" otherwise: catalogs, attachments, --signatures off); Attachments
	// counts those carried with the image (signatures, SBOMs, referrers).
	Signature   string `json:"signature,omitempty"`
	Attachments int    `json:"attachments,omitempty"`
}

// SignatureNote is the report's signature column: "signed", "unsigned", with
// ", N attachment(s) carried" when there are any; "" when not looked for.
func (im Image) SignatureNote() string {
	if im.Signature == "" {
		return ""
	}
	switch im.Attachments {
	case 0:
		return im.Signature
	case 1:
		return im.Signature + ", 1 attachment carried"
	}
	return fmt.Sprintf("%s, %d attachments carried", im.Signature, im.Attachments)
}

// Archive is what a mirror-to-disk run wrote.
type Archive struct {
	Dir         string   `json:"dir"`
	ID          string   `json:"id"`
	Chunks      []string `json:"chunks"`
	Blobs       int      `json:"blobs"`
	Bytes       int64    `json:"bytes"`
	ReliesOn    int      `json:"reliesOn"`
	Incremental bool     `json:"incremental"`
}

// Failed reports whether the image was not mirrored.
func (im Image) Failed() bool { return im.Status == "failed" || im.Status == "not run" }

// Sort puts every list of r in a stable order (stages stay in run order).
func (r *Run) Sort() {
	sort.Slice(r.Catalogs, func(i, j int) bool { return r.Catalogs[i].Source < r.Catalogs[j].Source })
	for _, c := range r.Catalogs {
		sort.Slice(c.Packages, func(i, j int) bool { return c.Packages[i].Name < c.Packages[j].Name })
		for _, p := range c.Packages {
			sort.Strings(p.Images)
		}
	}
	sort.Slice(r.Images, func(i, j int) bool {
		a, b := r.Images[i], r.Images[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Destination < b.Destination
	})
	sort.Strings(r.Blocked)
}

// Save writes r as JSON to dataPath (the working directory's report.json) and
// the page to htmlPath (report.html).
func Save(dataPath, htmlPath string, r *Run) error {
	return SaveAll(r, Files{Data: dataPath, HTML: htmlPath})
}

// Files are where one copy of a report goes: its data (JSON) and its page.
type Files struct{ Data, HTML string }

// SaveAll writes r, rendered once, to each of files. Every file is replaced
// atomically, so that a reader sees either the old report or the new one.
func SaveAll(r *Run, files ...Files) error {
	x, err := Render(r)
	if err != nil {
		return err
	}
	return x.Save(files...)
}

// SaveRun writes r as the run's own report (own) and as the last report
// (last), unless r was refused and last holds a run that was not: a refused
// run never hides the last run that did something.
func SaveRun(r *Run, own, last Files) error {
	x, err := Render(r)
	if err != nil {
		return err
	}
	return x.SaveRun(own, last)
}

func replaces(r *Run, lastData string) bool {
	if !r.Refused {
		return true
	}
	b, err := os.ReadFile(lastData)
	if err != nil {
		return true
	}
	var last struct {
		Refused bool `json:"refused"`
	}
	return json.Unmarshal(b, &last) != nil || last.Refused
}

// Regenerate writes the page to htmlPath again from the run Save wrote to
// dataPath. A missing dataPath is an error wrapping fs.ErrNotExist.
func Regenerate(dataPath, htmlPath string) error {
	b, err := os.ReadFile(dataPath)
	if err != nil {
		return err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w: run airlock mirror again to record it anew", dataPath, err)
	}
	r.Sort()
	var page bytes.Buffer
	if err := Write(&page, &r); err != nil {
		return err
	}
	return atomicfile.WriteFile(htmlPath, page.Bytes(), 0)
}

// Write writes the HTML page of r.
func Write(w io.Writer, r *Run) error {
	return page.Execute(w, newView(r))
}

// Picture is a picture a content source drew for the report.
type Picture struct {
	Title string `json:"title"`
	// SVG is the picture as Graphviz writes it.
	SVG string `json:"svg"`
}
