// Package workspace owns airlock's working directory: the name of every file
// and folder airlock keeps there (plan, mapping, results, dry-run lists, cluster
// resources, shard folders, catalog caches, report files, archive state), and
// the records that outlive a run and the formats they are written in: the
// history of what every run put into (or deleted from) a registry, the delete
// plans, and the record of the archives disk-to-mirror loaded. It also owns
// the working directory's lock (lock.go): one run at a time, or the shards of
// one plan side by side.
//
// A workspace is the folder a user names with --workspace file://DIR (or the
// file:// target of mirror-to-disk); airlock writes into DIR/working-dir only,
// which is a Dir.
//
// workspace must not know how a run is orchestrated (package pipeline), how
// images are copied (the copy engine) or how catalogs are filtered (prune): it
// reads and writes records. It depends on package mirror (the plan, not the
// copy engine) only for the plan's vocabulary the history records (workflow,
// image kind, the plan's catalogs), and on mirror/archive for the batch
// identities of loaded.json.
package workspace

import "path/filepath"

// DefaultName is disk-to-mirror's workspace folder, in the current directory,
// when --workspace is not given.
const DefaultName = "airlock-workspace"

// The names of the working directory's files and folders.
const (
	// WorkingDirName is the working directory inside a workspace.
	WorkingDirName = "working-dir"

	// PlanFile is the plan (--plan-only writes it with every image's blobs).
	PlanFile = "plan.json"
	// MappingFile lists source=destination for every image of the plan.
	MappingFile = "mapping.txt"
	// MissingFile lists what is not at the destination (dry run, unfinished
	// shards).
	MissingFile = "missing.txt"
	// ResultsFile is the run's outcome, image by image.
	ResultsFile = "results.json"
	// ReportDataFile and ReportHTMLFile are the run's report: its data and
	// the page made from it.
	ReportDataFile = "report.json"
	ReportHTMLFile = "report.html"
	// ReportsDirName keeps the report of every run (report-NNNNNN.json and
	// .html, numbered from 1): report.html is the last one, unless that run
	// was refused (RunReport).
	ReportsDirName = "reports"
	// LogsDirName holds one log file per run (airlock-TIME-PID.log), as
	// oc-mirror's working-dir/logs; the newest KeepLogs are kept.
	LogsDirName = "logs"
	// DryRunDirName holds a dry run's mapping and missing lists.
	DryRunDirName = "dry-run"
	// RegistriesDDirName is the registries.d folder of --policy without
	// --registries.d.
	RegistriesDDirName = "containers/registries.d"
	// ClusterResourcesDirName holds the cluster resources of the run.
	ClusterResourcesDirName = "cluster-resources"
	// ShardsDirName holds the working directory of each shard of a
	// mirror-to-disk plan (shards/PART).
	ShardsDirName = "shards"
	// OperatorCatalogsDirName is the cache of fetched catalog images.
	OperatorCatalogsDirName = "operator-catalogs"
	// ReleasesDirName holds the release payloads read: each payload image's
	// release-manifests/ (catalogimage.FetchFolders), and on the
	// disconnected side the payloads copied out of an archive
	// (releases/archived/HEX/image).
	ReleasesDirName = "releases"
	// HelmChartsDirName holds the charts as OCI artifacts (one OCI layout
	// per chart version).
	HelmChartsDirName = "helm-charts"
	// ArchivedCatalogsDirName holds the catalogs disk-to-mirror copied out of
	// an archive, by digest (archived-catalogs/HEX/image, and their pruned
	// catalogs under archived-catalogs/HEX/filtered).
	ArchivedCatalogsDirName = "archived-catalogs"
	// ArchiveStateFile records the blobs mirror-to-disk already shipped, so
	// the next archive holds only what the other side lacks.
	ArchiveStateFile = "archive-state.json"
	// LoadedFile records the archives disk-to-mirror loaded, by destination.
	LoadedFile = "loaded.json"
	// AttachmentsFile records the attachments (signatures, SBOMs, referrers)
	// found for each source image digest, so that a re-run does not look again
	// (mirror/signature.Record; --refresh-signatures looks again).
	AttachmentsFile = "attachments.json"
	// HistoryDirName holds the history: one run-NNNNNN.json per run.
	HistoryDirName = "history"
	// RecordedTagsFile, in the history folder, is what the newest mirror
	// run recorded at its destination (the tags of the images it left
	// there), written beside its record so that the next run reads it
	// instead of the record (RecordedTags).
	RecordedTagsFile = "recorded-tags.txt"
	// DeleteDirName holds the delete plan (DeletePlanFile) and the record of
	// every plan generated (PlansDirName/HEX.yaml).
	DeleteDirName  = "delete"
	DeletePlanFile = "delete-images.yaml"
	PlansDirName   = "plans"
)

// The names inside the folder of a catalog (a fetched catalog's, or an archived
// one's).
const (
	// FilteredDirName holds the catalog pruned by each selection
	// (filtered/HASH).
	FilteredDirName = "filtered"
	// ConfigsDirName is a file-based catalog: the pruned one in a filtered
	// folder, or the conversion of a SQLite catalog next to its database.
	ConfigsDirName = "configs"
	// ImageDirName is an OCI layout holding a catalog image (the rebuilt one
	// in a filtered folder, the archived one in archived-catalogs/HEX).
	ImageDirName = "image"
	// MemoFile is the memo of what the catalog stage derived from one catalog
	// and one selection, in its filtered folder.
	MemoFile = "catalog-memo.json"
	// ConvertedFile marks a SQLite catalog converted completely (next to
	// ConfigsDirName).
	ConvertedFile = "converted.json"
)

// Dir is a working directory: DIR/working-dir of a workspace DIR, or the
// working directory of one shard inside it. Its methods name the files and
// folders airlock keeps there.
type Dir string

// At returns the working directory of the workspace folder dir.
func At(dir string) Dir { return Dir(filepath.Join(dir, WorkingDirName)) }

// Open returns the working directory of the workspace folder dir as an
// absolute path.
func Open(dir string) (Dir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return At(abs), nil
}

// Path is the folder itself.
func (d Dir) Path() string { return string(d) }

// Workspace is the folder holding the working directory.
func (d Dir) Workspace() string { return filepath.Dir(string(d)) }

func (d Dir) join(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}

// PlanPath is plan.json.
func (d Dir) PlanPath() string { return d.join(PlanFile) }

// MappingPath is mapping.txt.
func (d Dir) MappingPath() string { return d.join(MappingFile) }

// MissingPath is missing.txt.
func (d Dir) MissingPath() string { return d.join(MissingFile) }

// ResultsPath is results.json.
func (d Dir) ResultsPath() string { return d.join(ResultsFile) }

// ReportDataPath is report.json.
func (d Dir) ReportDataPath() string { return d.join(ReportDataFile) }

// ReportHTMLPath is report.html.
func (d Dir) ReportHTMLPath() string { return d.join(ReportHTMLFile) }

// ReportsDir is the folder of every run's report.
func (d Dir) ReportsDir() string { return d.join(ReportsDirName) }

// LogsDir is the folder of the runs' log files.
func (d Dir) LogsDir() string { return d.join(LogsDirName) }

// DryRunDir is the folder of a dry run's lists.
func (d Dir) DryRunDir() string { return d.join(DryRunDirName) }

// DryRunMappingPath is dry-run/mapping.txt.
func (d Dir) DryRunMappingPath() string { return d.join(DryRunDirName, MappingFile) }

// DryRunMissingPath is dry-run/missing.txt.
func (d Dir) DryRunMissingPath() string { return d.join(DryRunDirName, MissingFile) }

// RegistriesDDir is the registries.d folder --policy reads signatures with
// when --registries.d is not given (oc-mirror's name): sigstore attachments
// in every registry.
func (d Dir) RegistriesDDir() string { return d.join(RegistriesDDirName) }

// ClusterResourcesDir is cluster-resources.
func (d Dir) ClusterResourcesDir() string { return d.join(ClusterResourcesDirName) }

// Shard is the working directory of shard part (archive.ShardPart) of a
// mirror-to-disk plan.
func (d Dir) Shard(part string) Dir { return Dir(d.join(ShardsDirName, part)) }

// OperatorCatalogsDir is the cache of fetched catalog images.
func (d Dir) OperatorCatalogsDir() string { return d.join(OperatorCatalogsDirName) }

// ReleasesDir holds the release payloads read (ReleasesDirName).
func (d Dir) ReleasesDir() string { return d.join(ReleasesDirName) }

// ArchivedReleaseImageDir is the OCI layout of the archived release payload
// with digest hex (its encoded part).
func (d Dir) ArchivedReleaseImageDir(hex string) string {
	return d.join(ReleasesDirName, "archived", hex, ImageDirName)
}

// HelmChartDir is the OCI layout of chart version of repository repo.
func (d Dir) HelmChartDir(repo, chart, version string) string {
	return d.join(HelmChartsDirName, repo, chart+"-"+version)
}

// ArchivedCatalogDir is the folder of the archived catalog with digest hex
// (its encoded part).
func (d Dir) ArchivedCatalogDir(hex string) string { return d.join(ArchivedCatalogsDirName, hex) }

// ArchivedCatalogImageDir is the OCI layout of the archived catalog hex.
func (d Dir) ArchivedCatalogImageDir(hex string) string {
	return d.join(ArchivedCatalogsDirName, hex, ImageDirName)
}

// ArchiveStatePath is archive-state.json.
func (d Dir) ArchiveStatePath() string { return d.join(ArchiveStateFile) }

// LoadedPath is loaded.json.
func (d Dir) LoadedPath() string { return d.join(LoadedFile) }

// AttachmentsPath is the record of the attachments found per source image.
func (d Dir) AttachmentsPath() string { return d.join(AttachmentsFile) }

// HistoryDir is the history folder.
func (d Dir) HistoryDir() string { return d.join(HistoryDirName) }

// RecordedTagsPath is history/recorded-tags.txt.
func (d Dir) RecordedTagsPath() string { return d.join(HistoryDirName, RecordedTagsFile) }

// DeleteDir is the folder of the delete plans.
func (d Dir) DeleteDir() string { return d.join(DeleteDirName) }

// DeletePlanPath is delete/delete-images.yaml.
func (d Dir) DeletePlanPath() string { return d.join(DeleteDirName, DeletePlanFile) }

// FilteredCatalog is the folder of one catalog pruned by one selection:
// CATALOG/filtered/HASH, where CATALOG is a fetched or archived catalog's
// folder and HASH names the selection.
type FilteredCatalog string

// Filtered returns catalogDir/filtered/hash.
func Filtered(catalogDir, hash string) FilteredCatalog {
	return FilteredCatalog(filepath.Join(catalogDir, FilteredDirName, hash))
}

// Path is the folder itself.
func (f FilteredCatalog) Path() string { return string(f) }

// ConfigsDir is the pruned file-based catalog.
func (f FilteredCatalog) ConfigsDir() string { return filepath.Join(string(f), ConfigsDirName) }

// ImageDir is the OCI layout of the rebuilt catalog image.
func (f FilteredCatalog) ImageDir() string { return filepath.Join(string(f), ImageDirName) }

// MemoPath is the catalog memo.
func (f FilteredCatalog) MemoPath() string { return filepath.Join(string(f), MemoFile) }
