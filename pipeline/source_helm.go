package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/helm"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/workspace"
)

// helmSource is mirror.helm: each chart (of a chart repository, HTTP or
// oci://, or local) rendered with Helm's engine; the images its objects name
// are mirrored (generic mirror sets), and the chart itself as an OCI artifact
// that `helm install oci://MIRROR/REPO/CHART --version V` pulls. Origins are
// "helm:REPO/CHART:VERSION" (REPO is "local" for local charts).
type helmSource struct {
	r *run
	// recs are the charts of the run (Select, or Load: those kept); served
	// the archives written for the index.yaml files.
	recs   []chartRecord
	served chartIndexes
}

const (
	helmOriginPrefix = "helm:"
	// helmChartKind is the kind of the charts' own artifacts in the plan.
	helmChartKind mirror.ImageKind = "helm-chart"
	// wantHelm is the history's kind for what a chart asks for.
	wantHelm = "helm"
	// helmChartsExtra is the file the archive carries: what each chart was.
	helmChartsExtra = "charts.json"
	// helmLocalRepo is the repository name of local charts.
	helmLocalRepo = "local"
)

// chartRecord is one chart as a run found it (the archive carries them).
type chartRecord struct {
	Repository string `json:"repository"`
	Chart      string `json:"chart"`
	Version    string `json:"version"`
	// ArchiveDigest is the sha256 of the chart archive.
	ArchiveDigest string `json:"archiveDigest,omitempty"`
	// Ref names the chart's artifact in the plan.
	Ref    string       `json:"ref"`
	Images []helm.Found `json:"images,omitempty"`
	Error  string       `json:"error,omitempty"`
}

func (c chartRecord) origin() string {
	return helmOriginPrefix + c.Repository + "/" + c.Chart + ":" + c.Version
}

func (s *helmSource) Name() string { return "helm" }

func (s *helmSource) Owns(origin string) bool { return strings.HasPrefix(origin, helmOriginPrefix) }

// Preflight checks the local charts and values files exist before anything
// moves (not on disk-to-mirror: the archive carries the charts); repositories are reached at selection (one down fails its charts).
func (s *helmSource) Preflight(context.Context) ([]Probe, error) {
	h := s.helm()
	if h == nil || s.r.workflow == mirror.DiskToMirror {
		return nil, nil // the charts travel in the archive
	}
	for _, l := range h.Local {
		if _, err := os.Stat(s.path(l.Path)); err != nil {
			return nil, fmt.Errorf("helm.local %s: %w; set path to a chart archive (.tgz) or a chart folder", l.Name, err)
		}
	}
	for _, c := range allHelmCharts(h) {
		if c.ValuesFile != "" {
			if _, err := os.Stat(s.path(c.ValuesFile)); err != nil {
				return nil, fmt.Errorf("helm chart %s: valuesFile: %w", c.Name, err)
			}
		}
	}
	return nil, nil
}

func (s *helmSource) helm() *imageset.Helm {
	if s.r.cfg == nil {
		return nil
	}
	return s.r.cfg.Mirror.Helm
}

func allHelmCharts(h *imageset.Helm) []imageset.HelmChart {
	out := slices.Clone(h.Local)
	for _, r := range h.Repositories {
		out = append(out, r.Charts...)
	}
	return out
}

// path is p relative to the configuration's folder.
func (s *helmSource) path(p string) string {
	if filepath.IsAbs(p) || s.r.opts.ConfigPath == "" {
		return p
	}
	return filepath.Join(filepath.Dir(s.r.opts.ConfigPath), p)
}

func (s *helmSource) Select(ctx context.Context) (*Selection, error) {
	sel := &Selection{Wants: map[string][]workspace.Want{}}
	h := s.helm()
	if h == nil {
		return sel, nil
	}
	s.served = chartIndexes{}
	var recs []chartRecord
	for _, repo := range h.Repositories {
		recs = append(recs, s.selectRepo(ctx, sel, repo)...)
	}
	for _, l := range h.Local {
		rec := chartRecord{Repository: helmLocalRepo, Chart: l.Name}
		ch, err := helm.LoadPath(s.path(l.Path))
		if err == nil && ch.Name() != l.Name {
			err = fmt.Errorf("local chart %s at %s names itself %s in Chart.yaml; set name: %s", l.Name, l.Path, ch.Name(), ch.Name())
		}
		recs = append(recs, s.chart(sel, rec, l, ch, err))
	}
	s.recs = recs
	if err := s.writeIndexes(s.served); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return nil, err
	}
	sel.Extras = map[string][]byte{helmChartsExtra: b}
	return sel, nil
}

// selectRepo selects the charts of one repository: each listed, or every
// version of every chart when none is.
func (s *helmSource) selectRepo(ctx context.Context, sel *Selection, repo imageset.HelmRepository) []chartRecord {
	if rest, ok := location.CutChartRegistry(repo.URL); ok {
		var out []chartRecord
		for _, c := range repo.Charts {
			rec := chartRecord{Repository: repo.Name, Chart: c.Name, Version: c.Version}
			ch, ref, err := s.ociChart(ctx, strings.TrimSuffix(rest, "/")+"/"+c.Name, c.Version)
			rec.Ref = ref
			out = append(out, s.chart(sel, rec, c, ch, err))
		}
		if len(repo.Charts) == 0 {
			out = append(out, s.chart(sel, chartRecord{Repository: repo.Name, Chart: "*"}, imageset.HelmChart{}, nil,
				fmt.Errorf("chart repository %s: an oci:// repository has no index to list its charts; list them under charts", repo.URL)))
		}
		return out
	}
	f := &helm.Fetcher{Client: s.r.srcRegistry().HTTPClient(), Retry: s.r.retry(), Log: s.r.log}
	idx, err := f.Index(ctx, repo.URL)
	charts := repo.Charts
	if err == nil && len(charts) == 0 {
		for _, name := range idx.Charts() {
			for _, v := range idx.Versions(name) {
				charts = append(charts, imageset.HelmChart{Name: name, Version: v.Version})
			}
		}
		s.r.log.Info("helm repository lists no charts: mirroring every version of every chart", "repository", repo.Name, "charts", len(idx.Charts()), "versions", len(charts))
	}
	if err != nil {
		if len(charts) == 0 {
			charts = []imageset.HelmChart{{Name: "*"}}
		}
		var out []chartRecord
		for _, c := range charts {
			out = append(out, s.chart(sel, chartRecord{Repository: repo.Name, Chart: c.Name, Version: c.Version}, c, nil, err))
		}
		return out
	}
	var out []chartRecord
	for _, c := range charts {
		rec := chartRecord{Repository: repo.Name, Chart: c.Name, Version: c.Version}
		v, err := idx.Select(c.Name, c.Version)
		var ch *helm.Chart
		if err == nil {
			rec.Version = v.Version
			var data []byte
			if data, err = f.Chart(ctx, repo.URL, v); err == nil {
				ch, err = helm.LoadArchive(data)
			}
		}
		if err != nil {
			err = fmt.Errorf("chart repository %s (%s): %w", repo.Name, repo.URL, err)
		}
		out = append(out, s.chart(sel, rec, c, ch, err))
	}
	return out
}

// ociChart reads a chart from an OCI registry: repo is HOST/PATH/CHART.
func (s *helmSource) ociChart(ctx context.Context, repo, version string) (*helm.Chart, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	reg := s.r.srcRegistry()
	if version == "" || strings.ContainsAny(version, "<>=~^*xX ,|") {
		// A constraint: the newest of the repository's version tags it accepts.
		tags, err := reg.Tags(ctx, repo)
		if err != nil {
			return nil, "", fmt.Errorf("chart oci://%s: listing its versions (tags): %w", repo, err)
		}
		chart := repo[strings.LastIndex(repo, "/")+1:]
		v, err := helm.TagIndex(chart, tags).Select(chart, version)
		if err != nil {
			return nil, "", fmt.Errorf("chart oci://%s: %w", repo, err)
		}
		version = v.Version
	}
	ref := repo + ":" + helm.Tag(version)
	ch, md, err := chartArtifact(ctx, reg, repo, helm.Tag(version), ref)
	if err != nil {
		return nil, ref, err
	}
	return ch, ref + "@" + md.String(), nil
}

// chart renders one loaded chart (or records why it could not be) and asks
// for its artifact and images.
func (s *helmSource) chart(sel *Selection, rec chartRecord, c imageset.HelmChart, ch *helm.Chart, err error) chartRecord {
	var found []helm.Found
	if err == nil {
		rec.Version = ch.Version()
		rec.ArchiveDigest = helm.ArchiveDigest(ch.Archive)
		var vals map[string]any
		if vals, err = s.values(c); err == nil {
			var rendered *helm.Rendered
			if rendered, err = helm.Render(ch, vals); err == nil {
				found, err = helm.Images(rendered, c.ImagePaths)
			}
		}
	}
	origin := rec.origin()
	tag := helm.Tag(rec.Version)
	if reference.TagRegexp.FindString(tag) != tag || tag == "" { // no version, or a constraint no version met
		tag = "latest"
	}
	req := mirror.ImageRequest{Kind: helmChartKind, Origin: origin, TargetRepo: strings.ToLower(rec.Repository + "/" + rec.Chart), TargetTag: tag}
	if rec.Ref == "" {
		rec.Ref = "helm-charts.invalid/" + strings.ToLower(rec.Repository+"/"+sanitizeChartName(rec.Chart)) + ":" + tag
	}
	req.Name = rec.Ref
	if err == nil && !strings.Contains(rec.Ref, "@") {
		var a *helm.Artifact
		if a, err = helm.WriteArtifact(ch, s.r.workDir.HelmChartDir(rec.Repository, rec.Chart, rec.Version)); err == nil {
			req.Built = &mirror.BuiltImage{LayoutDir: a.LayoutDir, Digest: a.Digest, MediaType: a.MediaType}
		}
	}
	if err == nil {
		err = s.serveChart(s.served, rec.Repository, ch)
	}
	if err != nil {
		rec.Error = err.Error()
		req.Error = rec.Error
		sel.Warnings = append(sel.Warnings, fmt.Sprintf("helm chart %s %s: %v", rec.Chart, rec.Version, err))
	}
	sel.Images = append(sel.Images, req)
	w := workspace.Want{Kind: wantHelm, Catalog: rec.Repository, Package: rec.Chart, Version: rec.Version}
	sel.Wants[req.Name] = append(sel.Wants[req.Name], w)
	for _, f := range found {
		sel.Images = append(sel.Images, mirror.ImageRequest{Name: f.Image, Kind: mirror.KindGeneric, Origin: origin, Platforms: imageset.PlatformList(c.Platforms)})
		sel.Wants[f.Image] = append(sel.Wants[f.Image], w)
	}
	rec.Images = found
	return rec
}

func sanitizeChartName(n string) string {
	if n == "*" || n == "" {
		return "all"
	}
	return n
}

// values are the configured values of c: inline, or from its valuesFile.
func (s *helmSource) values(c imageset.HelmChart) (map[string]any, error) {
	if c.ValuesFile == "" {
		return c.Values, nil
	}
	b, err := os.ReadFile(s.path(c.ValuesFile))
	if err != nil {
		return nil, fmt.Errorf("valuesFile: %w", err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("valuesFile %s: %w", c.ValuesFile, err)
	}
	return v, nil
}

// Load keeps the archived charts the configuration names and their images,
// reading what each chart was from the archive's charts.json (no chart
// repository is reached: the charts travel as their artifacts).
func (s *helmSource) Load(ctx context.Context, ar Archived) (*Loaded, error) {
	out := &Loaded{Wants: map[string][]workspace.Want{}}
	h := s.helm()
	if h == nil {
		out.Keep = func(archive.ImageRecord, string) []string { return nil }
		return out, nil
	}
	var recs []chartRecord
	if b, ok := ar.Extras[helmChartsExtra]; ok {
		if err := json.Unmarshal(b, &recs); err != nil {
			return nil, fmt.Errorf("archive: %s: %w", helmChartsExtra, err)
		}
	}
	kept := map[string]bool{}
	s.recs = nil
	for _, rec := range recs {
		if rec.Error == "" && helmNames(h, rec) {
			kept[rec.origin()] = true
			s.recs = append(s.recs, rec)
		}
	}
	warnings, err := s.serveArchived(ctx, ar, s.recs)
	if err != nil {
		return nil, err
	}
	out.Warnings = warnings
	for _, need := range helmWanted(h) {
		if !slices.ContainsFunc(recs, func(rec chartRecord) bool { return rec.Error == "" && need.matches(rec) }) {
			out.Missing = append(out.Missing, "helm chart "+need.String()+" (not in the archive)")
		}
	}
	out.Keep = func(ir archive.ImageRecord, _ string) []string {
		var o []string
		for _, origin := range ir.Origins {
			if kept[origin] {
				o = append(o, origin)
			}
		}
		return o
	}
	return out, nil
}

// Resources: none of their own (the chart images are in the generic mirror
// sets; the charts are pulled with oci:// where they are).
func (s *helmSource) Resources(*mirror.Plan, func(mirror.PlanImage) bool) (Resources, error) {
	return Resources{}, nil
}

func (s *helmSource) Wants(im mirror.PlanImage, origin string) []workspace.Want {
	rest := strings.TrimPrefix(origin, helmOriginPrefix)
	repo, chart, _ := strings.Cut(rest, "/")
	chart, version, _ := strings.Cut(chart, ":")
	return []workspace.Want{{Kind: wantHelm, Catalog: repo, Package: chart, Version: version, Image: im.Owner()}}
}

// Pin records the chart versions the run mirrored: the pinned configuration
// names each chart by the exact version (imageset.Pins.Charts).
func (s *helmSource) Pin(p *mirror.Plan, pins *imageset.Pins) {
	for _, im := range p.Images {
		if im.Kind != helmChartKind || im.Error != "" {
			continue
		}
		for _, o := range im.Origins {
			if s.Owns(o) {
				if pins.Charts == nil {
					pins.Charts = map[string][]string{}
				}
				rest := strings.TrimPrefix(o, helmOriginPrefix)
				key, version, _ := strings.Cut(rest, ":")
				pins.Charts[key] = append(pins.Charts[key], version)
			}
		}
	}
}

// Deletes: delete.helm names the chart (by repository, name and version).
func (s *helmSource) Deletes(cfg *imageset.DeleteImageSetConfiguration, w workspace.Want) (bool, bool) {
	if w.Kind != wantHelm {
		return false, false
	}
	if cfg.Delete.Helm == nil {
		return false, true
	}
	return helmNames(cfg.Delete.Helm, chartRecord{Repository: w.Catalog, Chart: w.Package, Version: w.Version}), true
}
