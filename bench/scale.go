package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/workspace"
)

// ScaleWorkload is the scale section's workload of about n catalog images:
// four catalogs (as a site mirroring Red Hat's four) of n/10 packages in
// all (each a bundle image and a channel of three bundles) naming the rest,
// one tag in twenty named by two catalogs, four tags to a repository, the
// repositories in n/100 namespaces (a repository's tags named by two
// catalogs), one image in fifty a two-arch index, eight shared base layers
// and one unique layer per image, all tiny (a few KiB), so that what grows
// with n is the number of images, not bytes on disk. ScaleRelease is
// mirrored beside it at every size.
func ScaleWorkload(n int) workload.Options {
	pk := max(4, n/10)
	ix := n / 50
	return workload.Options{Namespace: "scale", Repos: max(1, n/4), Images: max(1, n-pk-ix-scaleCatalogs), Indexes: ix,
		BaseLayers: 8, BaseLayerSize: 2 << 10, UniqueLayers: 1, UniqueBytes: int64(n) * 512,
		Seed: uint64(7000 + n), Packages: pk, OlderBundles: 2, Catalogs: scaleCatalogs, SharedEvery: 20, Namespaces: max(1, n/100)}
}

// scaleCatalogs is the number of catalogs of the scale workload.
const scaleCatalogs = 4

// ScaleRelease is the release of the scale workload: one z-stream with as
// many components as the release section's (a 4.15 payload), tiny layers.
var ScaleRelease = releasetest.Spec{Version: "4.15.1", Components: DefaultReleaseWorkload.Components, LayerSize: 2 << 10}

// scaleMaxNestedPaths is passed to every mirror of the scale section: deeper
// than any of its paths (no name changes), it makes the cluster resources
// scope their mirror rules by repository, the largest they can be.
const scaleMaxNestedPaths = 16

// scaleConfig is the scale section's ImageSetConfiguration (kind
// ImageSetConfiguration, under mirror:) or DeleteImageSetConfiguration
// (under delete:): the release's channel, one z-stream, and every catalog.
func scaleConfig(kind, stanza string, seed *seeded) []byte {
	b := fmt.Appendf(nil, "apiVersion: mirror.openshift.io/v2alpha1\nkind: %s\n%s:\n", kind, stanza)
	if r := seed.Release; r != nil {
		b = fmt.Appendf(b, "  platform:\n    channels:\n    - name: %s\n      minVersion: %s\n      maxVersion: %s\n", releaseChannel, r.Version, r.Version)
	}
	b = append(b, "  operators:\n"...)
	for _, c := range seed.CatalogRefs {
		b = fmt.Appendf(b, "  - catalog: %s\n", c)
	}
	return b
}

// scaleRun is one size's measures, for the growth rows.
type scaleRun struct {
	n                        int // images
	size                     int // the size asked for (-scale)
	plan, first, noop        Measure
	src, dst                 int64 // requests of the first run
	results, report, history int64 // bytes
	largestObject            int64
	largestObjectName        string
	mirrorSets               mirrorSets
	m2d, d2m, del            Measure
	reportOpen               time.Duration
}

// runScale mirrors the scale workload of each size of cfg.ScaleSizes on
// loopback (the source on the catalog port, the destination fresh): the plan
// alone (--plan-only), the first mirror-to-mirror run, the no-op re-run, and
// the sizes of what the workspace keeps; then how each measure grew per
// image from one size to the next.
func runScale(ctx context.Context, cfg Config) ([]Row, error) {
	host := fmt.Sprintf("127.0.0.1:%d", cfg.CatalogPort)
	var rows []Row
	var runs []scaleRun
	var errs []error
	for _, n := range cfg.ScaleSizes {
		r, rr, err := scaleSize(ctx, cfg, host, n)
		rows = append(rows, rr...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%d images: %w", n, err))
			continue
		}
		runs = append(runs, r)
	}
	for i := 1; i < len(runs); i++ {
		rows = append(rows, growthRow(runs[i-1], runs[i]))
	}
	if len(runs) > 2 {
		rows = append(rows, growthRow(runs[0], runs[len(runs)-1]))
	}
	return rows, errors.Join(errs...)
}

func scaleSize(ctx context.Context, cfg Config, host string, n int) (scaleRun, []Row, error) {
	r := scaleRun{n: n, size: n}
	rel := ScaleRelease
	seed, err := seedCatalogScale(ctx, cfg, ScaleWorkload(n), host, &rel)
	if err != nil {
		return r, nil, err
	}
	st := seed.Stats
	releaseImages := len(seed.Release.Components) + 1
	images := st.Tags - len(seed.CatalogRefs) + releaseImages
	repos := st.Repos + 2 // the release's: ocp/release, ocp/art-dev
	r.n = images
	input := fmt.Sprintf("scale %d: %d images, %d repositories, %s", n, images, repos, Bytes(st.BlobBytes+seed.Release.UniqueBytes))
	rows := []Row{heading(fmt.Sprintf("scale: %d images (%d catalogs: %d packages heads only, %d two-arch indexes; release %s: %d images) in %d repositories, %d blobs of a few KiB (%s); source and destination on loopback; repository-scoped mirror rules",
		images, len(seed.CatalogRefs), max(1, seed.Options.Packages), st.Indexes, seed.Release.Version, releaseImages, repos, st.Blobs+len(seed.Release.Blobs),
		Bytes(st.BlobBytes+seed.Release.UniqueBytes)))}
	src, err := StartRegistry(ctx, cfg.Registry, seed.Root)
	if err != nil {
		return r, rows, err
	}
	defer src.Stop()
	wan, err := registrytest.StartWAN(src.Addr(), registrytest.WANConfig{Listen: host})
	if err != nil {
		return r, rows, fmt.Errorf("listen on %s (-catalog-port picks another port): %w", host, err)
	}
	defer wan.Close()
	work := filepath.Join(cfg.WorkDir, fmt.Sprintf("scale-%d", n))
	defer os.RemoveAll(work)
	dst, err := StartRegistry(ctx, cfg.Registry, filepath.Join(work, "dst"))
	if err != nil {
		return r, rows, err
	}
	defer dst.Stop()
	env, stopRelease, err := serveReleases(filepath.Join(work, "release"), releaseChannel, *seed.Release)
	if err != nil {
		return r, rows, err
	}
	defer stopRelease()
	isc := filepath.Join(work, "isc.yaml")
	if err := os.WriteFile(isc, scaleConfig("ImageSetConfiguration", "mirror", seed), 0o644); err != nil {
		return r, rows, err
	}
	ws := filepath.Join(work, "ws")
	args := []string{"mirror", "-c", isc, "--workspace", location.File(ws).String(), location.Docker(dst.Addr() + "/mirror").String(),
		"--dest-tls-verify=false", "--src-tls-verify=false", "--max-nested-paths", fmt.Sprint(scaleMaxNestedPaths)}
	var reg time.Duration // the registries' CPU in the last run
	var last Counts       // the destination's requests in the last run
	runWith := func(bin, what string, extra ...string) (Measure, int64, int64, error) {
		s0, d0, c0 := wan.Stats(), dst.Proxy.Counts(), src.CPU()+dst.CPU()
		defer func() { reg, last = src.CPU()+dst.CPU()-c0, dst.Proxy.Counts().Sub(d0) }()
		cfg.Log.Info("measuring", "what", what, "images", images)
		m, err := Exec(ctx, Command{Name: bin, Args: append(append([]string(nil), args...), extra...), Env: cfg.scaleEnv(env, n, what)})
		if err == nil && m.Exit != 0 {
			err = fmt.Errorf("%s: exit %d: %s", what, m.Exit, lastLine(m.Stderr))
		}
		return m, wan.Stats().Requests - s0.Requests, dst.Proxy.Counts().Sub(d0).Requests, err
	}
	run := func(what string, extra ...string) (Measure, int64, int64, error) {
		return runWith(cfg.Airlock, what, extra...)
	}
	perImage := func(v int64) string { return fmt.Sprintf("%.2f", float64(v)/float64(images)) }
	var s, d int64
	if !cfg.ScaleReruns {
		if r.plan, s, _, err = run("scale: plan only", "--plan-only"); err != nil {
			return r, rows, err
		}
		rows = append(rows, Row{Name: "scale: plan (--plan-only)", Input: input, Wall: r.plan.Wall, RSS: r.plan.MaxRSS, CPU: r.plan.CPU(), RegCPU: reg,
			Requests: fmt.Sprintf("%d / –", s), Note: fmt.Sprintf("%s source requests per image; CPU %s per 1,000 images", perImage(s), Seconds(r.plan.CPU()*1000/time.Duration(images)))})
	}
	if r.first, r.src, r.dst, err = run("scale: first m2m"); err != nil {
		return r, rows, err
	}
	rows = append(rows, Row{Name: "scale: m2m first run", Input: input, Wall: r.first.Wall, RSS: r.first.MaxRSS, CPU: r.first.CPU(), RegCPU: reg,
		Requests: fmt.Sprintf("%d / %d", r.src, r.dst), Note: fmt.Sprintf("%s / %s requests per image (source / destination); CPU %s per 1,000 images",
			perImage(r.src), perImage(r.dst), Seconds(r.first.CPU()*1000/time.Duration(images)))})
	atSize(&rows[len(rows)-1], n, fmt.Sprintf("peak RSS ≤ %d MB", scaleRSSTarget/1_000_000), r.first.MaxRSS <= scaleRSSTarget)
	if r.noop, s, d, err = run("scale: no-op re-run"); err != nil {
		return r, rows, err
	}
	rows = append(rows, Row{Name: "scale: m2m no-op re-run", Input: input, Wall: r.noop.Wall, RSS: r.noop.MaxRSS, CPU: r.noop.CPU(), RegCPU: reg,
		Requests: fmt.Sprintf("%d / %d", s, d), Note: fmt.Sprintf("%s / %s requests per image; at the destination %s", perImage(s), perImage(d), requestKinds(last))})
	atSize(&rows[len(rows)-1], n, "≤ "+Seconds(scaleNoopTarget), r.noop.Wall <= scaleNoopTarget)
	every := Row{Name: "scale: m2m no-op re-run, every image asked (--check-every-image)", Input: input}
	if m, s, d, err := run("scale: no-op re-run, every image asked", "--check-every-image"); err != nil {
		every.Note = "not measured: " + err.Error()
	} else {
		every.Wall, every.RSS, every.CPU, every.RegCPU = m.Wall, m.MaxRSS, m.CPU(), reg
		every.Requests = fmt.Sprintf("%d / %d", s, d)
		every.Note = fmt.Sprintf("%s / %s requests per image; at the destination %s; the re-run before tag listings", perImage(s), perImage(d), requestKinds(last))
	}
	rows = append(rows, every)
	rows = append(rows, noopFloor(ctx, seed, host, dst, images, input))
	wd := workspace.At(ws)
	r.results, r.report, r.history = fileSize(wd.ResultsPath()), fileSize(wd.ReportHTMLPath()), treeSize(wd.HistoryDir())
	r.largestObjectName, r.largestObject = largestObject(wd.ClusterResourcesDir())
	rows = append(rows, Row{Name: "scale: what the workspace keeps", Input: input,
		Note: fmt.Sprintf("results.json %s, report.html %s, history %s (after the three runs), per image %s / %s / %s; largest cluster resource %s: %s (etcd takes ≤ 1.5 MiB)",
			Bytes(r.results), Bytes(r.report), Bytes(r.history), Bytes(r.results/int64(images)), Bytes(r.report/int64(images)), Bytes(r.history/int64(images)),
			r.largestObjectName, Bytes(r.largestObject)),
		Target: "objects ≤ 1.5 MiB", Met: met(r.largestObject <= 1536<<10)})
	ms := countMirrorSets(wd.ClusterResourcesDir())
	r.mirrorSets = ms
	rows = append(rows, Row{Name: "scale: mirror sets (repository-scoped, --max-nested-paths)", Input: input,
		Note: fmt.Sprintf("%d IDMS objects (%d rules), %d ITMS objects (%d rules), %s in all, largest %s (split at %s: -0, -1, ...)",
			ms.IDMS, ms.IDMSRules, ms.ITMS, ms.ITMSRules, Bytes(ms.Bytes), Bytes(ms.Largest), Bytes(manifests.DefaultMaxObjectBytes)),
		Target: "objects ≤ 1.5 MiB", Met: met(ms.IDMSRules > 0 && ms.Largest <= 1536<<10)})
	if cfg.ScaleHold != nil {
		holdNoop(ctx, cfg, func(bin string, extra ...string) (Measure, time.Duration, Counts, error) {
			m, _, _, err := runWith(bin, "scale: held no-op re-run", extra...)
			return m, reg, last, err
		})
	}
	if cfg.ScaleReruns {
		return r, rows, nil
	}
	open, why := reportOpen(ctx, wd.ReportHTMLPath())
	r.reportOpen = open
	or := Row{Name: "scale: report.html opened in headless Chromium", Input: input, Wall: open, Target: "≤ 3 s", Met: met(open > 0 && open <= 3*time.Second),
		Note: fmt.Sprintf("report.html %s: from navigation to the end of the load event, a layout forced after it", Bytes(r.report))}
	if open == 0 {
		or.Met, or.Note = "", "not measured: "+why
	}
	rows = append(rows, or)
	ar, err := scaleAirGap(ctx, cfg, &r, work, seed, env, ws, dst.Addr()+"/mirror", input)
	return r, append(rows, ar...), err
}

// The scale section's targets at scaleTargetSize images (and more): the
// first run's peak RSS, the no-op re-run's wall; and from the smallest size
// to the largest, the growth per image of the first run's wall and of the
// requests.
const (
	scaleTargetSize  = 20000
	scaleRSSTarget   = 600_000_000
	scaleNoopTarget  = 5 * time.Second
	scaleGrowthLimit = 1.2
)

// atSize gives row the target t, met when ok, at scaleTargetSize images
// and more (a size of the section, n); below, no target.
func atSize(row *Row, n int, t string, ok bool) {
	if n >= scaleTargetSize {
		row.Target, row.Met = t, met(ok)
	}
}

// scaleEnv is env, plus AIRLOCK_CPUPROFILE and AIRLOCK_MEMPROFILE with
// Config.ScaleProfiles: the profiles of command what at size n.
func (cfg Config) scaleEnv(env []string, n int, what string) []string {
	if cfg.ScaleProfiles == "" {
		return env
	}
	if err := os.MkdirAll(cfg.ScaleProfiles, 0o755); err != nil {
		cfg.Log.Warn("no CPU profile", "err", err)
		return env
	}
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.TrimPrefix(what, "scale: "))
	base := filepath.Join(cfg.ScaleProfiles, fmt.Sprintf("scale-%d-%s", n, slug))
	return append(env[:len(env):len(env)], "AIRLOCK_CPUPROFILE="+base+".pprof", "AIRLOCK_MEMPROFILE="+base+".heap.pprof")
}

// growthRow says how much each measure grew from a to b per image: 1.00 is
// linear, 1.30 means 30% more per image at the larger size. Its target:
// the first run's wall and the source and destination requests grow at
// most scaleGrowthLimit per image.
func growthRow(a, b scaleRun) Row {
	k := float64(b.n) / float64(a.n)
	g := func(x, y float64) string {
		if x <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", y/x/k)
	}
	d := func(x, y time.Duration) string { return g(float64(x), float64(y)) }
	i := func(x, y int64) string { return g(float64(x), float64(y)) }
	flat := true
	for _, x := range [][2]float64{{float64(a.first.Wall), float64(b.first.Wall)}, {float64(a.src), float64(b.src)}, {float64(a.dst), float64(b.dst)}} {
		flat = flat && x[0] > 0 && x[1]/x[0]/k <= scaleGrowthLimit
	}
	return Row{Name: fmt.Sprintf("scale: growth per image, %d → %d images", a.n, b.n), WallText: d(a.first.Wall, b.first.Wall),
		Target: fmt.Sprintf("first-run wall, requests ≤ %.2f", scaleGrowthLimit), Met: met(flat),
		Note: fmt.Sprintf("(1.00: linear) plan CPU %s, first-run CPU %s, no-op wall %s, m2d wall %s, d2m wall %s, delete --generate wall %s, source requests %s, destination requests %s, results.json %s, report.html %s, history %s, mirror sets %s; peak RSS of the first run %s → %s; report.html opened in %s → %s",
			d(a.plan.CPU(), b.plan.CPU()), d(a.first.CPU(), b.first.CPU()), d(a.noop.Wall, b.noop.Wall), d(a.m2d.Wall, b.m2d.Wall), d(a.d2m.Wall, b.d2m.Wall), d(a.del.Wall, b.del.Wall),
			i(a.src, b.src), i(a.dst, b.dst), i(a.results, b.results), i(a.report, b.report), i(a.history, b.history), i(a.mirrorSets.Bytes, b.mirrorSets.Bytes), MiB(a.first.MaxRSS), MiB(b.first.MaxRSS),
			Seconds(a.reportOpen), Seconds(b.reportOpen))}
}

// requestKinds says what the requests c counts asked for: manifest HEADs and
// GETs, and the rest (tag listings, tokens, blobs).
func requestKinds(c Counts) string {
	return fmt.Sprintf("%d manifest HEADs, %d manifest GETs, %d other requests (tag lists...)", c.ManifestHEAD, c.ManifestGET, c.Requests-c.ManifestHEAD-c.ManifestGET)
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
