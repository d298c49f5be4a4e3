// Command airlock-bench is `make bench`: it measures airlock at real scale
// (catalog commands on the 1.7 GB real-scale catalog and generated ones, the
// copy workflows against skopeo sync and the registry's ingestion floor, the
// packages' Go benchmarks), prints one table, keeps it in bench/results and
// rewrites the current tables of docs/benchmarks.md from the kept runs.
//
//	go run ./bench/cmd/airlock-bench -quick          # < 2 min: real-scale catalog, small catalog, 64 MB workload
//	go run ./bench/cmd/airlock-bench                 # full: + large catalog, 0.91 GB reference workload, 3 runs, Go benchmarks
//	go run ./bench/cmd/airlock-bench -catalogs real -copy=false -docs ""
//	go run ./bench/cmd/airlock-bench -catalogs none -copy=false -wan none -release none -go-bench off -pipeline off -scale 1000,5000,20000 -scale-report-only
//	go run ./bench/cmd/airlock-bench -docs-only      # rewrite docs/benchmarks.md's current tables from bench/results
//	go run ./bench/cmd/airlock-bench wan-proxy -preset wan -upstream http://127.0.0.1:5000
//
// Every flag has an environment default (BENCH_QUICK=1, BENCH_CATALOGS,
// BENCH_WORKLOAD, BENCH_COUNT, BENCH_COPY, BENCH_GO, BENCH_DOCS, BENCH_NOTE,
// AIRLOCK_BIN, AIRLOCK_FIXTURES).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/airlock-mirror/airlock/bench"
	"github.com/airlock-mirror/airlock/bench/workload"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "wan-proxy" {
		if err := wanProxy(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "airlock-bench:", err)
			os.Exit(2)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == bench.FloorPushCommand {
		if err := bench.FloorPushMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "airlock-bench:", err)
			os.Exit(2)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "airlock-bench:", err)
		os.Exit(1)
	}
}

func env(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func envBool(k string, def bool) bool {
	v, ok := os.LookupEnv(k)
	if !ok || v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def
	}
	return b
}

// self is this binary (it runs the floor clients apart), or "" when unknown.
func self() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// repoRoot walks up from the working directory to airlock's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/airlock-mirror/airlock\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the airlock checkout: run from the repository (make bench)")
		}
		dir = parent
	}
}

// findOcMirror is the oc-mirror binary to compare with: none for "none",
// else as bench.FindOcMirror finds it.
func findOcMirror(flagValue string) string {
	if flagValue == "none" {
		return ""
	}
	return bench.FindOcMirror(flagValue)
}

// scaleAlone switches off every section but the scale section's for the
// runs that measure a part of it (-scale-reruns, -scale-report-only,
// -scale-hold), unless the section's flag was given on the command line:
// those runs are loops over the scale rows, and the other sections would
// cost minutes before them.
func scaleAlone(cfg *bench.Config, given map[string]bool) {
	if !given["catalogs"] {
		cfg.Catalogs = nil
	}
	if !given["copy"] {
		cfg.Copy = false
	}
	if !given["pipeline"] {
		cfg.Pipeline = false
	}
	if !given["wan"] {
		cfg.Links = nil
	}
	if !given["release"] {
		cfg.ReleaseLink = ""
	}
	if !given["go-bench"] {
		cfg.GoBench = false
	}
}

func run() error {
	quick := flag.Bool("quick", envBool("BENCH_QUICK", false), "quick run (< 2 min): real-scale and small catalogs, one run each, the quick 64 MB workload, no Go benchmarks [BENCH_QUICK]")
	airlock := flag.String("airlock", env("AIRLOCK_BIN", ""), "airlock binary to measure (default: build ./cmd/airlock) [AIRLOCK_BIN]")
	catalogs := flag.String("catalogs", env("BENCH_CATALOGS", ""), "comma-separated catalog inputs: real, real-yaml (its YAML rendering; after real), v4.21 (YAML, with opm when -opm), small, large or a directory; \"none\" skips (default real,real-yaml,v4.21,small; full: + large) [BENCH_CATALOGS]")
	count := flag.Int("count", 0, "runs per catalog command: median wall, highest RSS (default 1 quick, 3 full) [BENCH_COUNT]")
	doCopy := flag.Bool("copy", envBool("BENCH_COPY", true), "run the copy section [BENCH_COPY]")
	pipe := flag.String("pipeline", env("BENCH_PIPELINE", "auto"), "run the whole-pipeline section (real-scale catalog image, mirror --dry-run): auto (full runs only), on, off [BENCH_PIPELINE]")
	pipeRoot := flag.String("pipeline-root", env("BENCH_PIPELINE_ROOT", "/tmp/airlock-bench-pipeline"), "keep (and reuse) the whole-pipeline section's seeded registry here")
	preset := flag.String("workload", env("BENCH_WORKLOAD", ""), "copy workload preset: reference, quick or tiny (default quick; full: reference) [BENCH_WORKLOAD]")
	mode := flag.String("copy-mode", env("BENCH_COPY_MODE", "catalog"), "catalog: mirror a catalog naming every tag (full: true); images: additionalImages")
	images := flag.Int("images", -1, "override the workload: single-platform image tags")
	indexes := flag.Int("indexes", -1, "override the workload: two-arch index tags")
	repos := flag.Int("repos", -1, "override the workload: repositories")
	baseLayers := flag.Int("base-layers", -1, "override the workload: shared base layers")
	baseMB := flag.Float64("base-mb", -1, "override the workload: MB per base layer")
	uniqueLayers := flag.Int("unique-layers", -1, "override the workload: unique layers per image")
	uniqueMB := flag.Float64("unique-mb", -1, "override the workload: total MB of unique layers")
	shards := flag.Bool("shards", envBool("BENCH_SHARDS", true), "copy section: measure 2 shards of the plan at once (per-shard bytes, wall) [BENCH_SHARDS]")
	shardsOnly := flag.Bool("shards-only", false, "copy section: only the sharded rows")
	airgapOnly := flag.Bool("airgap-only", false, "copy section: only the air-gap rows (mirror-to-disk and disk-to-mirror floors, m2d, d2m, their ratios)")
	skopeo := flag.Bool("skopeo", envBool("BENCH_SKOPEO", true), "compare with skopeo sync")
	ocMirror := flag.String("oc-mirror", env("BENCH_OC_MIRROR", ""), "oc-mirror binary to compare with at catalog scale, on the release workload and on the latency-bound row (default: oc-mirror on PATH, else the one scripts/build-oc-mirror.sh built); \"none\" measures airlock alone (needs -docs '': a table without oc-mirror must not replace the current one) [BENCH_OC_MIRROR]")
	installSkopeo := flag.Bool("install-skopeo", envBool("BENCH_INSTALL_SKOPEO", true), "apt-get install -y skopeo when missing")
	pImages := flag.Int("parallel-images", 0, "airlock mirror --parallel-images (0: airlock's default)")
	pLayers := flag.Int("parallel-layers", 0, "airlock mirror --parallel-layers (0: airlock's default)")
	floorPar := flag.Int("floor-parallel", 8, "concurrent requests of the ingestion-floor client")
	goBench := flag.String("go-bench", env("BENCH_GO", "auto"), "run the packages' Go benchmarks: auto (full runs only), on, off [BENCH_GO]")
	goPkgs := flag.String("go-bench-pkgs", env("BENCH_GO_PKGS", "./fbc/ ./fbc/validate/ ./fbc/legacy/ ./prune/ ./prune/graph/ ./report/ ./mirror/transfer/ ./mirror/catalogimage/ ./mirror/archive/ ./manifests/"), "packages for go test -bench (space-separated)")
	goTime := flag.String("go-benchtime", env("BENCH_GO_BENCHTIME", "1x"), "go test -benchtime")
	goTags := flag.String("go-tags", env("BENCH_GO_TAGS", ""), "go test -tags of the Go benchmarks (the Makefile passes its TAGS) [BENCH_GO_TAGS]")
	docs := flag.String("docs", env("BENCH_DOCS", "docs/benchmarks.md"), "record the run in bench/results and rewrite the current tables of this file, relative to the repository root (\"\": neither)")
	note := flag.String("note", env("BENCH_NOTE", ""), "label of the run in the table heading, e.g. \"noisy: load average 15\" [BENCH_NOTE]")
	work := flag.String("work", "", "work directory (default: a new temporary directory, removed at the end)")
	keep := flag.Bool("keep", false, "keep the work directory")
	realDir := flag.String("real-dir", env("BENCH_REAL_DIR", "/tmp/airlock-large/catalog"), "reuse this unpacked real-scale catalog when complete")
	fixtures := flag.String("fixtures", env("AIRLOCK_FIXTURES", ""), "fixtures folder (default ../shared/fixtures from the repository root) [AIRLOCK_FIXTURES]")
	realYAMLDir := flag.String("real-yaml-dir", env("BENCH_REAL_YAML_DIR", "/tmp/airlock-large/catalog-yaml"), "keep (and reuse) the YAML rendering of the real-scale catalog here")
	opm := flag.String("opm", env("OPM_BIN", ""), "opm binary (operator-registry v1.73.0) to measure beside airlock on the v4.21 input; empty skips it [OPM_BIN]")
	links := flag.String("wan", env("BENCH_WAN", "wan,far"), "catalog-scale section: mirror over these WAN simulator presets (lan, wan, far, rtt50: latency-bound rows, signatures on and off, best with -catalog-workload catalog-small-images; loopback); \"none\" skips it [BENCH_WAN]")
	catPreset := flag.String("catalog-workload", env("BENCH_CATALOG_WORKLOAD", ""), "catalog-scale workload preset: catalog (500 images, 1.5 GB), catalog-quick (1/10) or catalog-small-images (61 images, 5 MB) (default catalog-quick; full: catalog) [BENCH_CATALOG_WORKLOAD]")
	catRefs := flag.String("catalog-refs", env("BENCH_CATALOG_REFS", "digest"), "how the catalog-scale catalog names its bundle and related images: digest (pinned, as Red Hat's catalogs) or tag [BENCH_CATALOG_REFS]")
	cacheDir := flag.String("cache", env("BENCH_CACHE", bench.DefaultCacheDir), "keep what is seeded once (the catalog-scale registry) here [BENCH_CACHE]")
	cleanCache := flag.Bool("clean-cache", false, "remove the cache folder first (it is seeded again)")
	catPort := flag.Int("catalog-port", 5790, "the catalog-scale source's fixed port on 127.0.0.1 (the catalog names its images there)")
	release := flag.String("release", env("BENCH_RELEASE", "wan"), "release section: mirror the release workload (two z-streams) over this WAN simulator preset, oc-mirror v2 beside it; \"none\" skips it [BENCH_RELEASE]")
	releaseRuns := flag.Int("release-runs", 1, "release section: mirror the first z-stream this many times, each into a fresh destination; its row gives the median")
	releaseStorage := flag.String("release-storage", env("BENCH_RELEASE_STORAGE", "ram"), "release section: where its registries keep their storage: ram (a folder on /dev/shm when it is a tmpfs, else the work folder), disk (the work folder) or a folder [BENCH_RELEASE_STORAGE]")
	releaseKB := flag.Int("release-layer-kb", 0, "release section: KiB of each component's own layer (default 1024; quick: 256)")
	scale := flag.String("scale", env("BENCH_SCALE", ""), "scale section: these numbers of images, comma-separated (e.g. 1000,5000,20000); tiny blobs, seeded once into -cache [BENCH_SCALE]")
	scaleReportOnly := flag.Bool("scale-report-only", false, "scale section: only report.html, written from a generated run of each -scale size and opened in headless Chromium (no seeding, no mirroring: seconds)")
	docsOnly := flag.Bool("docs-only", false, "measure nothing: rewrite the current tables of -docs from the runs kept in bench/results, and stop")
	scaleProfiles := flag.String("scale-profiles", "", "scale section: write the CPU and heap profiles of every airlock command into this folder (scale-SIZE-WHAT.pprof, .heap.pprof; go tool pprof FILE)")
	scaleReruns := flag.Bool("scale-reruns", false, "scale section: only the first mirror-to-mirror run, the no-op re-runs and the no-op floor of each size (no plan-only run, report opening, air gap or delete)")
	scaleHold := flag.Bool("scale-hold", false, "scale section: after each size's re-run rows, keep its registries up and run the no-op re-run again for every line of standard input (an airlock binary, empty for -airlock, then extra flags), logging wall, CPU and requests, until standard input ends")
	flag.Parse()
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })

	root, err := repoRoot()
	if err != nil {
		return err
	}
	if *docsOnly {
		if *docs == "" {
			return errors.New("-docs-only needs -docs (the document whose current tables to rewrite)")
		}
		doc := *docs
		if !filepath.IsAbs(doc) {
			doc = filepath.Join(root, doc)
		}
		return bench.UpdateDoc(doc, filepath.Join(root, "bench", "results"))
	}
	cfg := bench.Config{
		RepoRoot: root, Airlock: *airlock, WorkDir: *work, Keep: *keep, Quick: *quick,
		Fixtures: *fixtures, RealDir: *realDir, RealYAMLDir: *realYAMLDir, Opm: *opm, Count: *count,
		Copy: *doCopy, Shards: *shards || *shardsOnly, ShardsOnly: *shardsOnly, AirgapOnly: *airgapOnly, CopyMode: *mode, Skopeo: *skopeo, InstallSkopeo: *installSkopeo,
		OcMirror:       findOcMirror(*ocMirror),
		ParallelImages: *pImages, ParallelLayers: *pLayers, FloorParallel: *floorPar, Self: self(),
		GoBenchPkgs: strings.Fields(*goPkgs), GoBenchTime: *goTime, GoTags: *goTags, Note: *note, Out: os.Stdout,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	if cfg.Count == 0 {
		cfg.Count = 3
		if *quick {
			cfg.Count = 1
		}
		if v, err := strconv.Atoi(os.Getenv("BENCH_COUNT")); err == nil && v > 0 {
			cfg.Count = v
		}
	}
	switch c := *catalogs; {
	case c == "none":
	case c != "":
		cfg.Catalogs = strings.Split(c, ",")
	case *quick:
		cfg.Catalogs = []string{"real", "real-yaml", "v4.21", "small"}
	default:
		cfg.Catalogs = []string{"real", "real-yaml", "v4.21", "small", "large"}
	}
	if *mode != "catalog" && *mode != "images" {
		return fmt.Errorf("invalid -copy-mode %q: use catalog or images", *mode)
	}
	p := *preset
	if p == "" {
		p = "reference"
		if *quick {
			p = "quick"
		}
	}
	if cfg.Workload, err = workload.Preset(p); err != nil {
		return err
	}
	ov := func(v int, dst *int) {
		if v >= 0 {
			*dst = v
		}
	}
	ov(*images, &cfg.Workload.Images)
	ov(*indexes, &cfg.Workload.Indexes)
	ov(*repos, &cfg.Workload.Repos)
	ov(*baseLayers, &cfg.Workload.BaseLayers)
	ov(*uniqueLayers, &cfg.Workload.UniqueLayers)
	if *baseMB >= 0 {
		cfg.Workload.BaseLayerSize = int64(*baseMB * 1e6)
	}
	if *uniqueMB >= 0 {
		cfg.Workload.UniqueBytes = int64(*uniqueMB * 1e6)
	}
	switch *goBench {
	case "auto":
		cfg.GoBench = !*quick
	case "on", "1", "true":
		cfg.GoBench = true
	case "off", "0", "false":
	default:
		return fmt.Errorf("invalid -go-bench %q: use auto, on or off", *goBench)
	}
	switch *pipe {
	case "auto":
		cfg.Pipeline = !*quick
	case "on", "1", "true":
		cfg.Pipeline = true
	case "off", "0", "false":
	default:
		return fmt.Errorf("invalid -pipeline %q: use auto, on or off", *pipe)
	}
	cfg.PipelineRoot = *pipeRoot
	cfg.CacheDir, cfg.CleanCache, cfg.CatalogPort = *cacheDir, *cleanCache, *catPort
	if *links != "none" && *links != "" {
		cfg.Links = strings.Split(*links, ",")
		cfg.CatalogPreset = *catPreset
		if cfg.CatalogPreset == "" {
			cfg.CatalogPreset = "catalog"
			if *quick {
				cfg.CatalogPreset = "catalog-quick"
			}
		}
		if cfg.CatalogWorkload, err = workload.Preset(cfg.CatalogPreset); err != nil {
			return err
		}
		switch *catRefs {
		case "digest":
		case "tag":
			cfg.CatalogWorkload.TagRefs = true
		default:
			return fmt.Errorf("invalid -catalog-refs %q: use digest or tag", *catRefs)
		}
	}
	if *release != "none" && *release != "" {
		cfg.ReleaseLink, cfg.ReleaseWorkload = *release, bench.DefaultReleaseWorkload
		if *quick {
			cfg.ReleaseWorkload = bench.QuickReleaseWorkload
		}
		cfg.ReleaseRuns = *releaseRuns
		cfg.ReleaseStorage = *releaseStorage
		if *releaseKB > 0 {
			cfg.ReleaseWorkload.LayerSize = *releaseKB << 10
		}
	}
	for _, f := range strings.Split(*scale, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 20 {
			return fmt.Errorf("invalid -scale %q: want numbers of images of at least 20, comma-separated", *scale)
		}
		cfg.ScaleSizes = append(cfg.ScaleSizes, n)
	}
	cfg.ScaleProfiles, cfg.ScaleReportOnly, cfg.ScaleReruns = *scaleProfiles, *scaleReportOnly, *scaleReruns
	if *scaleHold {
		cfg.ScaleHold = os.Stdin
	}
	if *scaleReportOnly && len(cfg.ScaleSizes) == 0 {
		return errors.New("-scale-report-only needs -scale (the numbers of images)")
	}
	if *scaleReruns || *scaleReportOnly || *scaleHold {
		scaleAlone(&cfg, given)
	}
	if *ocMirror == "none" && *docs != "" && (cfg.ReleaseLink != "" || len(cfg.Links) > 0) {
		return errors.New("-oc-mirror none leaves oc-mirror out of the release and catalog-scale tables, which would replace the current ones: add -docs ''")
	}
	if *scaleReruns && *docs != "" {
		return errors.New("-scale-reruns measures part of the scale section, whose current table it would replace: add -docs ''")
	}
	if *docs != "" {
		cfg.Docs = *docs
		if !filepath.IsAbs(cfg.Docs) {
			cfg.Docs = filepath.Join(root, cfg.Docs)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if len(res.Failures) > 0 {
		return fmt.Errorf("%d measurement(s) failed (see the table)", len(res.Failures))
	}
	return nil
}
