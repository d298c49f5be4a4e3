// Package bench is the harness of `make bench`: it measures airlock at real
// scale and prints one table.
//
//   - catalog: `airlock catalog validate`, `catalog render` and `catalog prune`
//     (heads only and full) as child processes on the real-scale catalog
//     (community-operators-prod, 1.7 GB) and on generated catalogs: wall time,
//     peak RSS (the child's ru_maxrss), CPU and MB/s;
//   - copy: `airlock mirror` mirror-to-mirror (first run and no-op re-run),
//     mirror-to-disk and disk-to-mirror of a generated copy workload between
//     embedded registries running in their own processes, each behind a
//     counting proxy (bytes pulled and pushed, blobs, requests), side by side
//     with `skopeo sync`, the registry's ingestion floor (a minimal client
//     pushing every unique blob and manifest once, in parallel) and `cp -r`
//     of the registry storage;
//   - catalog scale: `airlock mirror` heads-only of a generated catalog shaped
//     like redhat-operator-index (500 images, 1.5 GB; 1/10 in quick runs),
//     seeded once into a cache folder, from a source behind the WAN
//     simulator (registrytest.WAN: round trips, a bandwidth cap, token auth,
//     CDN redirects) over the wan and far links: wall time against the link
//     floor, time to the first blob byte sent, the no-op re-run, peak RSS;
//   - release: a channel's two z-streams (160 components each, most of them
//     shared) mirrored over the WAN simulator, the second after the first
//     (maxVersion raised), and oc-mirror v2's first mirror of the same;
//   - go: the packages' Go benchmarks (go test -bench), once each.
//
// Run writes the table to Config.Out; with Config.Docs, it keeps the run, with
// the date, the machine and the commit, in bench/results and rewrites the
// current tables of Config.Docs (docs/benchmarks.md) from the kept runs.
//
// For benchmarks and tests only: the binary never links it (internal/depcheck).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
)

// Config says what to measure.
type Config struct {
	// RepoRoot is the airlock checkout (go.mod); Airlock the binary to measure
	// (built from RepoRoot into WorkDir when empty).
	RepoRoot, Airlock string
	// Registry is the airlock binary whose `registry serve` serves the
	// benchmark's registries (default: Airlock). The tests give a build
	// without the race detector, the registries being no code they test.
	Registry string
	// WorkDir holds everything the run creates (default: a new temporary
	// directory, removed at the end unless Keep).
	WorkDir string
	Keep    bool
	// Quick labels the run and picks the quick defaults of the command.
	Quick bool
	// Catalog inputs: "real" (the real-scale catalog), "small" and "large"
	// (internal/gen/catalog presets), or a directory path.
	Catalogs []string
	// Fixtures is the folder holding large/community-operators-prod-all.tar.zst
	// (default $AIRLOCK_FIXTURES, else RepoRoot/../shared/fixtures).
	Fixtures string
	// RealDir is an already unpacked real-scale catalog root to reuse when it is
	// complete (default /tmp/airlock-large/catalog).
	RealDir string
	// RealYAMLDir holds the YAML rendering of the real-scale catalog
	// ("real-yaml"), reused when complete (default: in WorkDir).
	RealYAMLDir string
	// Opm is an opm binary (operator-registry v1.73.0) measured beside
	// airlock on the "v4.21" input; empty skips it.
	Opm string
	// Count runs each catalog command this many times: the table shows the
	// median wall time and the highest peak RSS.
	Count int
	// Copy runs the copy section with Workload. CopyMode is "catalog" (the
	// images are the relatedImages of a one-bundle catalog mirrored with
	// full: true) or "images" (additionalImages).
	Copy bool
	// Shards adds the sharded mirror-to-mirror rows to the copy section;
	// ShardsOnly runs only them.
	Shards, ShardsOnly bool
	// AirgapOnly runs only the air-gap rows of the copy section: the
	// mirror-to-disk and disk-to-mirror floors, m2d, d2m and their ratios.
	AirgapOnly bool
	Workload   workload.Options
	CopyMode   string
	// Skopeo compares with skopeo sync; InstallSkopeo runs apt-get install -y
	// skopeo when it is missing.
	Skopeo, InstallSkopeo bool
	// OcMirror is the oc-mirror binary the catalog-scale section compares
	// with over wan ("": the row says it is not available).
	OcMirror string
	// ParallelImages and ParallelLayers are passed to airlock mirror (0: its
	// defaults); FloorParallel bounds the floor client's requests.
	ParallelImages, ParallelLayers, FloorParallel int
	// Self is the harness binary, which runs the floor clients in processes
	// of their own (its floor-push subcommand, FloorPushMain): their CPU is
	// then measured exactly. Empty: they run inside the harness, and their CPU
	// is estimated as the harness's less its counting proxies'.
	Self string
	// GoBench runs go test -bench over GoBenchPkgs with GoBenchTime.
	GoBench     bool
	GoBenchPkgs []string
	// GoTags are the build tags of the Go benchmarks ("isal": ISA-L's inflater
	// beside klauspost's in BenchmarkGzipReader).
	GoTags      string
	GoBenchTime string
	// Pipeline runs the whole-pipeline section (the real-scale catalog as a
	// catalog image, mirror --dry-run); PipelineRoot keeps its seeded registry
	// for later runs (default: in WorkDir).
	Pipeline     bool
	PipelineRoot string
	// Links are the WAN simulator's presets (registrytest.WANPresets, or
	// "loopback": no simulated link) the catalog-scale section mirrors over;
	// empty skips the section. CatalogWorkload is its workload
	// (CatalogPreset names it), seeded once into CacheDir (default
	// DefaultCacheDir; CleanCache empties it first) with a catalog naming
	// the images at 127.0.0.1:CatalogPort, where the simulator listens.
	Links           []string
	CatalogWorkload workload.Options
	CatalogPreset   string
	CacheDir        string
	CleanCache      bool
	CatalogPort     int
	// ReleaseLink is the WAN simulator preset the release section mirrors
	// its workload over (ReleaseWorkload; default DefaultReleaseWorkload);
	// empty skips the section.
	ReleaseLink     string
	ReleaseWorkload ReleaseWorkload
	// ReleaseRuns is how many times the first z-stream is mirrored, each
	// into a fresh destination and workspace: its row gives the median
	// (and every wall in its note); 0 or 1 is once.
	ReleaseRuns int
	// ReleaseStorage is the folder under which the release section's
	// registries (the source, each destination, oc-mirror's destination)
	// keep their storage: "ram" (the default) a new folder on /dev/shm when
	// it is a tmpfs, "disk" the work folder, else that folder. They stand in
	// for machines of their own; on the work folder's disk their fsyncs
	// cost the destination 3 CPU-s a run (1.5 in RAM) and wait on whatever
	// else writes to the disk.
	ReleaseStorage string
	// ScaleSizes runs the scale section (ScaleWorkload) at each of these
	// numbers of images, smallest first; empty skips it.
	ScaleSizes []int
	// ScaleReportOnly measures, at each of ScaleSizes, only the opening of
	// report.html, written from a generated run shaped like the section's
	// (no seeding, no airlock command: seconds instead of an hour).
	ScaleReportOnly bool
	// ScaleProfiles, when set, is a folder where every airlock command of
	// the scale section writes its CPU profile (AIRLOCK_CPUPROFILE) and heap
	// profile (AIRLOCK_MEMPROFILE), named scale-SIZE-WHAT.pprof and
	// scale-SIZE-WHAT.heap.pprof.
	ScaleProfiles string
	// ScaleReruns, when set, runs only the rows of the scale section that a
	// re-run needs (the first mirror-to-mirror run, the no-op re-runs, the
	// no-op floor): no plan-only run, no report opening, no air gap, no
	// delete.
	ScaleReruns bool
	// ScaleHold, when set, keeps each size's registries up after its re-run
	// rows and runs the no-op re-run again for every line read from it (an
	// airlock binary to run, empty for Airlock, then extra flags), logging
	// its measures, until it ends: a loop for whoever works on the re-run
	// without paying the first run again.
	ScaleHold io.Reader
	// Out receives the table. With Docs set, the run is also recorded as a
	// file of its own in Results (default RepoRoot/bench/results) and the
	// current tables of Docs are rewritten from the recorded runs
	// (UpdateDoc): each section's table from the latest run that has it.
	Out           io.Writer
	Docs, Results string
	// Note labels the run in the table's heading (e.g. "noisy machine").
	Note string
	// Log receives progress.
	Log *slog.Logger
}

// Result is a finished run.
type Result struct {
	Header string
	Rows   []Row
	// Failures lists the measurements that could not be made.
	Failures []string
}

// Run measures what cfg asks and writes the table.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Count < 1 {
		cfg.Count = 1
	}
	if cfg.RepoRoot == "" {
		return nil, errors.New("bench: no repository root: run from the airlock checkout")
	}
	if cfg.WorkDir == "" {
		d, err := os.MkdirTemp("", "airlock-bench-")
		if err != nil {
			return nil, err
		}
		cfg.WorkDir = d
		if !cfg.Keep {
			defer os.RemoveAll(d)
		}
	}
	log := cfg.Log
	if cfg.CacheDir == "" {
		cfg.CacheDir = DefaultCacheDir
	}
	if cfg.CatalogPort == 0 {
		cfg.CatalogPort = 5790
	}
	if cfg.CleanCache {
		log.Info("removing the benchmarks' cache", "dir", cfg.CacheDir)
		if err := os.RemoveAll(cfg.CacheDir); err != nil {
			return nil, err
		}
	}
	load0 := loadAvg()
	start := time.Now()
	if cfg.Airlock == "" && cfg.needsAirlock() {
		cfg.Airlock = filepath.Join(cfg.WorkDir, "airlock")
		log.Info("building airlock", "to", cfg.Airlock)
		if out, err := goCmd(ctx, cfg.RepoRoot, "build", "-trimpath", "-tags", "containers_image_openpgp", "-o", cfg.Airlock, "./cmd/airlock").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build airlock: %w\n%s", err, out)
		}
	} else if abs, err := filepath.Abs(cfg.Airlock); err == nil {
		cfg.Airlock = abs
	}
	if cfg.Registry == "" {
		cfg.Registry = cfg.Airlock
	} else if abs, err := filepath.Abs(cfg.Registry); err == nil {
		cfg.Registry = abs
	}
	res := &Result{}
	fail := func(what string, err error) {
		log.Error("measurement failed", "what", what, "err", err)
		res.Failures = append(res.Failures, what+": "+err.Error())
	}
	if len(cfg.Catalogs) > 0 {
		rows, err := runCatalogs(ctx, cfg)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			fail("catalog", err)
		}
	}
	if cfg.Copy {
		rows, err := runCopy(ctx, cfg)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			fail("copy", err)
		}
	}
	if len(cfg.Links) > 0 {
		rows, err := runCatalogScale(ctx, cfg)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			fail("catalog scale", err)
		}
	}
	if cfg.ReleaseLink != "" {
		if cfg.ReleaseWorkload.Components == 0 {
			cfg.ReleaseWorkload = DefaultReleaseWorkload
		}
		rows, err := runRelease(ctx, cfg)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			fail("release", err)
		}
	}
	if len(cfg.ScaleSizes) > 0 {
		run := runScale
		if cfg.ScaleReportOnly {
			run = runScaleReport
		}
		rows, err := run(ctx, cfg)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			fail("scale", err)
		}
	}
	if cfg.Pipeline {
		rows, err := runPipeline(ctx, cfg)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			fail("whole pipeline", err)
		}
	}
	if cfg.GoBench && len(cfg.GoBenchPkgs) > 0 {
		rows, err := runGoBench(ctx, cfg)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			fail("go benchmarks", err)
		}
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	res.Header = header(cfg, load0, loadAvg(), time.Since(start))
	var sb strings.Builder
	sb.WriteString(res.Header)
	if err := WriteTable(&sb, res.Rows); err != nil {
		return res, err
	}
	for _, f := range res.Failures {
		sb.WriteString("\n- **not measured**: " + strings.ReplaceAll(f, "\n", " ") + "\n")
	}
	sb.WriteString("\n")
	if _, err := io.WriteString(cfg.Out, sb.String()); err != nil {
		return res, err
	}
	if cfg.Docs != "" {
		dir := cfg.Results
		if dir == "" {
			dir = filepath.Join(cfg.RepoRoot, "bench", "results")
		}
		path, err := RecordRun(dir, start, sb.String())
		if err != nil {
			return res, fmt.Errorf("record the run in %s: %w", dir, err)
		}
		if err := UpdateDoc(cfg.Docs, dir); err != nil {
			return res, fmt.Errorf("update the current tables of %s: %w", cfg.Docs, err)
		}
		log.Info("run recorded, current tables updated", "run", path, "doc", cfg.Docs)
	}
	return res, nil
}

// needsAirlock reports whether a section of cfg runs the airlock binary.
func (cfg Config) needsAirlock() bool {
	return len(cfg.Catalogs) > 0 || cfg.Copy || len(cfg.Links) > 0 || cfg.ReleaseLink != "" || cfg.Pipeline ||
		len(cfg.ScaleSizes) > 0 && !cfg.ScaleReportOnly
}

func goCmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	return cmd
}

// header describes the run: date, machine, versions, load.
func header(cfg Config, load0, load1 string, took time.Duration) string {
	kind := "full"
	if cfg.Quick {
		kind = "quick"
	}
	ver := "unknown"
	if out, err := exec.Command("git", "-C", cfg.RepoRoot, "describe", "--tags", "--always", "--dirty").Output(); err == nil {
		ver = strings.TrimSpace(string(out))
	}
	host, _ := os.Hostname()
	var b strings.Builder
	fmt.Fprintf(&b, "### %s: %s run", time.Now().UTC().Format("2006-01-02 15:04 UTC"), kind)
	if cfg.Note != "" {
		fmt.Fprintf(&b, " (%s)", cfg.Note)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "- machine: %s, %d cores (%s), %s memory, %s/%s; load average %s at start, %s at end\n",
		host, runtime.NumCPU(), cpuModel(), memTotal(), runtime.GOOS, runtime.GOARCH, load0, load1)
	fmt.Fprintf(&b, "- airlock %s, %s; run took %s\n", ver, runtime.Version(), took.Round(time.Second))
	if cfg.Copy {
		o := cfg.Workload
		fmt.Fprintf(&b, "- copy workload: %d images and %d two-arch indexes in %d repositories, %d shared base layers of %s, %d unique layers per image (%s in all), mode %s\n",
			o.Images, o.Indexes, o.Repos, o.BaseLayers, Bytes(o.BaseLayerSize), o.UniqueLayers, Bytes(o.UniqueBytes), cfg.CopyMode)
	}
	if len(cfg.Links) > 0 {
		fmt.Fprintf(&b, "- catalog scale: workload %s over %s (WAN simulator presets), cache %s\n", cfg.CatalogPreset, strings.Join(cfg.Links, ", "), cfg.CacheDir)
	}
	b.WriteString("\n")
	return b.String()
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return "?"
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "?"
}
