package bench

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
)

// DefaultCacheDir keeps what the benchmarks seed once and reuse (the
// catalog-scale workload's registry); `make clean` and -clean-cache remove it.
const DefaultCacheDir = "/tmp/airlock-bench-cache"

// seeded is a catalog-scale registry in the cache: its storage, the
// catalogs' references and the workload's sizes, and the release pushed
// beside them (if any).
type seeded struct {
	Root         string         `json:"-"`
	CatalogRef   string         `json:"catalogRef"`
	CatalogRefs  []string       `json:"catalogRefs"`
	CatalogLayer string         `json:"catalogLayer"` // digest of the (first) catalog image's layer
	Stats        workload.Stats `json:"stats"`
	Options      workload.Options
	Release      *releasetest.Release `json:"release,omitempty"`
}

// seedCatalogScale returns the registry of workload o whose catalogs name
// their images at host, seeding it into the cache the first time: the
// folder is keyed by the generator's parameters, so a change of them seeds
// anew. With a release spec, that release is pushed beside them, named at
// host too.
func seedCatalogScale(ctx context.Context, cfg Config, o workload.Options, host string, release *releasetest.Spec) (*seeded, error) {
	keyText := fmt.Sprintf("catalog-scale v1|%#v|%s", o, host)
	if release != nil {
		keyText += fmt.Sprintf("|release %s %d %d", release.Version, release.Components, release.LayerSize)
	}
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(keyText)))[:12]
	dir := filepath.Join(cfg.CacheDir, "catalog-"+key)
	marker := filepath.Join(dir, "seeded.json")
	s := &seeded{Root: filepath.Join(dir, "registry")}
	if b, err := os.ReadFile(marker); err == nil && json.Unmarshal(b, s) == nil && s.CatalogRef != "" {
		cfg.Log.Info("reusing the seeded catalog-scale registry", "dir", dir)
		return s, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w, err := workload.New(o)
	if err != nil {
		return nil, err
	}
	if s.CatalogRefs, err = w.AddCatalogs(host); err != nil {
		return nil, err
	}
	s.CatalogRef = s.CatalogRefs[0]
	s.Stats, s.Options = w.Stats(), o
	s.CatalogLayer = w.Catalog.Manifest.Layers[0].Digest.String()
	if free := freeBytes(dir); free >= 0 && free < 2*s.Stats.BlobBytes {
		return nil, fmt.Errorf("seed the catalog-scale workload into %s: %s free, need %s (-cache DIR elsewhere, or -catalog-workload catalog-quick)",
			dir, Bytes(free), Bytes(2*s.Stats.BlobBytes))
	}
	reg, err := StartRegistry(ctx, cfg.Registry, s.Root)
	if err != nil {
		return nil, err
	}
	defer reg.Stop()
	t0 := time.Now()
	if _, err := w.Push(ctx, workload.PushOptions{Registry: hostOf(reg.URL), Parallel: 8}); err != nil {
		return nil, fmt.Errorf("seed the catalog-scale registry in %s: %w", dir, err)
	}
	if release != nil {
		spec := *release
		spec.PushTo = hostOf(reg.URL)
		r, err := releasetest.Build(ctx, host, spec)
		if err != nil {
			return nil, fmt.Errorf("seed release %s into the catalog-scale registry in %s: %w", spec.Version, dir, err)
		}
		s.Release = &r
	}
	cfg.Log.Info("seeded the catalog-scale registry", "dir", dir, "tags", s.Stats.Tags, "blobs", s.Stats.Blobs,
		"bytes", Bytes(s.Stats.BlobBytes), "took", time.Since(t0).Round(time.Millisecond))
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return s, atomicfile.WriteFile(marker, b, 0o644)
}

// freeBytes is the space left for unprivileged users on dir's file system
// (-1 when unknown).
func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// spans records when the WAN served requests for one blob (the catalog
// layer): its GET at the registry host (answered 307) and at the CDN host.
type spans struct {
	mu         sync.Mutex
	digest     string
	first, end time.Time
}

func (s *spans) observe(_, path string, _ int, start, end time.Time) {
	if !strings.HasSuffix(path, "/blobs/"+s.digest) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() || start.Before(s.first) {
		s.first = start
	}
	if end.After(s.end) {
		s.end = end
	}
}

func (s *spans) span() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end.Sub(s.first)
}

// linkTargets are the targets per link (docs/benchmarks.md): first m2m / link floor.
var linkTargets = map[string]float64{"wan": 1.15, "far": 1.3}

// runCatalogScale mirrors the catalog-scale workload (heads only) over each
// of cfg.Links, each time into a fresh destination: first run, then (over
// wan) the no-op re-run.
func runCatalogScale(ctx context.Context, cfg Config) ([]Row, error) {
	log := cfg.Log
	o := cfg.CatalogWorkload
	host := fmt.Sprintf("127.0.0.1:%d", cfg.CatalogPort)
	seed, err := seedCatalogScale(ctx, cfg, o, host, nil)
	if err != nil {
		return nil, err
	}
	work := filepath.Join(cfg.WorkDir, "catalog-scale")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	src, err := StartRegistry(ctx, cfg.Registry, seed.Root)
	if err != nil {
		return nil, err
	}
	defer src.Stop()
	isc := filepath.Join(work, "isc.yaml")
	if err := os.WriteFile(isc, fmt.Appendf(nil, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: %s\n", seed.CatalogRef), 0o644); err != nil {
		return nil, err
	}
	st := seed.Stats
	unique := st.BlobBytes
	input := fmt.Sprintf("%s: %d images, %d indexes, %d blobs, %s", cfg.CatalogPreset, st.Tags-1, st.Indexes, st.Blobs, Bytes(unique))
	named := "pinned by digest"
	if o.TagRefs {
		named = "named by tag"
	}
	rows := []Row{heading(fmt.Sprintf("catalog scale: %d packages (heads only), %d images (%d two-arch indexes; the catalog's references %s) in %d repositories, %d unique blobs, %s; source behind the WAN simulator, destination on loopback; cache %s",
		max(1, o.Packages), st.Tags-1, st.Indexes, named, st.Repos, st.Blobs, Bytes(unique), cfg.CacheDir))}
	var errs []error
	var peak int64
	for _, link := range cfg.Links {
		wc, err := registrytest.WANPreset(link)
		if link == "loopback" {
			wc, err = registrytest.WANConfig{}, nil
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sp := &spans{digest: seed.CatalogLayer}
		wc.Listen, wc.Observe = host, sp.observe
		wan, err := registrytest.StartWAN(src.Addr(), wc)
		if err != nil {
			errs = append(errs, fmt.Errorf("WAN %s on %s (-catalog-port picks another port): %w", link, host, err))
			continue
		}
		if link == latencyLink {
			lr, err := latencyOverLink(ctx, cfg, link, wc, wan, src, isc, filepath.Join(work, link), input, st.Tags-1, st.Repos, unique)
			rows = append(rows, lr...)
			_ = wan.Close()
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		lr, peakRSS, err := mirrorOverLink(ctx, cfg, link, wc, wan, sp, src, isc, filepath.Join(work, link), input, unique)
		rows = append(rows, lr...)
		peak = max(peak, peakRSS)
		if link == "wan" && err == nil {
			or, oerr := ocMirrorOverLink(ctx, cfg, ocMirrorRun{}, link, wc, wan, src, isc, filepath.Join(work, "oc-mirror-"+link), input, unique, firstWall(lr))
			rows = append(rows, or...)
			err = oerr
		}
		if err == nil && link != "loopback" {
			dr, derr := diskOverLink(ctx, cfg, link, wc, wan, src, isc, filepath.Join(work, "m2d-"+link), input, unique)
			rows = append(rows, dr...)
			err = derr
		}
		_ = wan.Close()
		if err != nil {
			errs = append(errs, err)
		}
		log.Info("catalog scale measured", "link", link)
	}
	if peak > 0 {
		rows = append(rows, Row{Name: "catalog scale: peak RSS of the mirror (highest of the first runs)", Input: input, RSS: peak,
			Target: "≤ 300 MB", Met: met(peak <= 300e6)})
	}
	return rows, errors.Join(errs...)
}

// mirrorOverLink measures the first mirror-to-mirror run over one link into
// a fresh destination, its ratios and, over wan, the no-op re-run.
func mirrorOverLink(ctx context.Context, cfg Config, link string, wc registrytest.WANConfig, wan *registrytest.WAN, sp *spans,
	src *Registry, isc, work, input string, unique int64) ([]Row, int64, error) {
	dst, err := StartRegistry(ctx, cfg.Registry, filepath.Join(work, "dst"))
	if err != nil {
		return nil, 0, err
	}
	defer func() { dst.Stop(); _ = os.RemoveAll(work) }()
	args := []string{"mirror", "-c", isc, "--workspace", location.File(filepath.Join(work, "ws")).String(), location.Docker(dst.Addr() + "/mirror").String(),
		"--dest-tls-verify=false", "--src-tls-verify=false"}
	if cfg.ParallelImages > 0 {
		args = append(args, "--parallel-images", fmt.Sprint(cfg.ParallelImages))
	}
	if cfg.ParallelLayers > 0 {
		args = append(args, "--parallel-layers", fmt.Sprint(cfg.ParallelLayers))
	}
	name := "catalog scale m2m over " + link
	var rows []Row
	run := func(what string) (Measure, Row, time.Time, error) {
		s0, d0, w0 := src.Proxy.Counts(), dst.Proxy.Counts(), wan.Stats()
		cfg.Log.Info("measuring", "what", what)
		t0 := time.Now()
		m, err := Exec(ctx, Command{Name: cfg.Airlock, Args: args})
		if err != nil {
			return m, Row{}, t0, err
		}
		ds, dd, ws := src.Proxy.Counts().Sub(s0), dst.Proxy.Counts().Sub(d0), wan.Stats()
		r := Row{Name: what, Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(), Pulled: ds.BytesOut, Pushed: dd.BytesIn, Counted: true,
			Blobs: fmt.Sprintf("%d (%d)", dd.BlobsCommitted, dd.Mounted), Requests: fmt.Sprintf("%d / %d", ws.Requests-w0.Requests, dd.Requests),
			Note: fmt.Sprintf("link %s; over the link: %d connections, %d token requests, %d challenges, %d CDN redirects, %d answered 429; sent / unique %.2f",
				wc, ws.Connections-w0.Connections, ws.TokenRequests-w0.TokenRequests, ws.Challenges-w0.Challenges, ws.Redirects-w0.Redirects,
				ws.Throttled-w0.Throttled, float64(dd.UploadBytesIn)/float64(unique))}
		if ds.BlobBytesOut > 0 {
			r.Throughput = Rate(ds.BlobBytesOut, m.Wall)
		}
		if m.Exit != 0 {
			r.Note = fmt.Sprintf("FAILED (exit %d): %s", m.Exit, lastLine(m.Stderr))
			return m, r, t0, fmt.Errorf("%s: exit %d: %s", what, m.Exit, lastLine(m.Stderr))
		}
		return m, r, t0, nil
	}
	m, r, t0, err := run(name + ", first run")
	if r.Name != "" {
		rows = append(rows, r)
	}
	if err != nil {
		return rows, 0, err
	}
	if wc.Bandwidth > 0 {
		floor := time.Duration(float64(unique) / float64(wc.Bandwidth) * float64(time.Second))
		ratio := float64(m.Wall) / float64(floor)
		row := Row{Name: "catalog scale m2m over " + link + " / link floor (unique bytes / cap)", Input: input, WallText: fmt.Sprintf("%.2f×", ratio),
			Note: fmt.Sprintf("floor %s = %s / %.0f MB/s", Seconds(floor), Bytes(unique), float64(wc.Bandwidth)/1e6)}
		if t, ok := linkTargets[link]; ok {
			row.Target, row.Met = fmt.Sprintf("≤ %.2f×", t), met(ratio <= t)
		}
		rows = append(rows, row)
	}
	if first := dst.Proxy.FirstUploadByte(); !first.IsZero() {
		cat := sp.span()
		d := first.Sub(t0) - cat
		row := Row{Name: "catalog scale over " + link + ": start to first blob byte sent, less the catalog layer's transfer", Input: input, Wall: d,
			Note: fmt.Sprintf("first blob byte at the destination after %s, the catalog layer's GETs (registry and CDN) took %s", Seconds(first.Sub(t0)), Seconds(cat))}
		if link == "wan" {
			row.Target, row.Met = "≤ 1 s", met(d <= time.Second)
		}
		rows = append(rows, row)
	}
	if link == "wan" {
		_, nr, _, err := run(name + ", no-op re-run")
		if nr.Name != "" {
			nr.Target, nr.Met = "≤ 2 s", met(err == nil && nr.Wall <= 2*time.Second)
			rows = append(rows, nr)
		}
		if err != nil {
			return rows, m.MaxRSS, err
		}
	}
	return rows, m.MaxRSS, nil
}
