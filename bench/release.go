package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
)

// ReleaseWorkload is the release section's workload: two z-streams of one
// channel, Components images each, of which Changed differ in the second
// (the others are the same images), every component a shared base layer
// and a layer of LayerSize bytes of its own.
type ReleaseWorkload struct {
	Components, Changed, LayerSize int
}

// DefaultReleaseWorkload is 160 components (a 4.15 payload names about as
// many), 16 changed in the second z-stream, 1 MiB layers: 168 MB for the
// first z-stream, 17 MB new in the second. QuickReleaseWorkload has 256 KiB
// layers.
var (
	DefaultReleaseWorkload = ReleaseWorkload{Components: 160, Changed: 16, LayerSize: 1 << 20}
	QuickReleaseWorkload   = ReleaseWorkload{Components: 160, Changed: 16, LayerSize: 256 << 10}
)

// releaseLinkTarget is the target of the first release mirror over the
// link floor a client can reach (the dependent chain, then the other bytes at
// the link's cap: the unique bytes / cap alone leaves out the half second
// before any component is known); releaseIncrementTarget of the second
// z-stream's bytes sent / its unique bytes.
const (
	releaseLinkTarget      = 1.15
	releaseIncrementTarget = 1.1
	releaseChannel         = "stable-4.15"
)

// releaseSetup is the release section's sources: the registry behind the
// WAN simulator, the update service and the signature store (both on
// loopback, not behind the link), and the two z-streams.
type releaseSetup struct {
	src       *Registry
	wan       *registrytest.WAN
	wc        registrytest.WANConfig
	r1, r2    releasetest.Release
	env       []string // UPDATE_URL_OVERRIDE, OCP_SIGNATURE_URL, OCP_SIGNATURE_VERIFICATION_PK
	stop      func()
	increment int64 // bytes of the second z-stream's blobs the first lacks
	// storage is the folder of the registries' storage (releaseStorage),
	// storageDesc says where it is.
	storage, storageDesc string
	// timeline records the requests over the link during each run.
	timeline linkTimeline
}

// runRelease measures a release workload over cfg.ReleaseLink: airlock's
// first mirror-to-mirror of one z-stream against the link floor, the second
// z-stream (a later maxVersion, same workspace and destination) against its
// unique bytes, and oc-mirror v2's first mirror of the same configuration.
func runRelease(ctx context.Context, cfg Config) ([]Row, error) {
	link := cfg.ReleaseLink
	work := filepath.Join(cfg.WorkDir, "release")
	s, err := setUpRelease(ctx, cfg, link, work)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	input := fmt.Sprintf("release: 2 z-streams × %d components, %d changed, %s layers", cfg.ReleaseWorkload.Components,
		cfg.ReleaseWorkload.Changed, Bytes(int64(cfg.ReleaseWorkload.LayerSize)))
	rows := []Row{heading(fmt.Sprintf("release: channel %s, z-streams %s (%d components, %d blobs, %s) and %s (%d components changed, %s new), %s layers; source behind the WAN simulator (%s, its CDN serving the source's blob files), update service and signature store on loopback, destination on loopback, registries' storage %s",
		releaseChannel, s.r1.Version, len(s.r1.Components), len(s.r1.Blobs), Bytes(s.r1.UniqueBytes), s.r2.Version, cfg.ReleaseWorkload.Changed,
		Bytes(s.increment), Bytes(int64(cfg.ReleaseWorkload.LayerSize)), link, s.storageDesc))}
	isc1 := filepath.Join(work, "isc-1.yaml")
	isc2 := filepath.Join(work, "isc-2.yaml")
	for path, maxV := range map[string]string{isc1: s.r1.Version, isc2: s.r2.Version} {
		if err := os.WriteFile(path, fmt.Appendf(nil, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  platform:\n    channels:\n    - name: %s\n      minVersion: %s\n      maxVersion: %s\n",
			releaseChannel, s.r1.Version, maxV), 0o644); err != nil {
			return rows, err
		}
	}
	// Each first z-stream goes into a destination and workspace of its own
	// (run i of ReleaseRuns: dst-i, ws-i); the second z-stream follows the
	// last of them.
	var dst *Registry
	var ws string
	fresh := func(i int) error {
		if dst != nil {
			dst.Stop()
			if s.storage != work {
				_ = os.RemoveAll(dst.Root) // RAM: one destination at a time
			}
		}
		var err error
		if dst, err = StartRegistry(ctx, cfg.Registry, filepath.Join(s.storage, fmt.Sprintf("dst-%d", i))); err != nil {
			return err
		}
		ws = location.File(filepath.Join(work, fmt.Sprintf("ws-%d", i))).String()
		return nil
	}
	defer func() {
		if dst != nil {
			dst.Stop()
		}
	}()
	runs := 0
	var timeline releaseMilestones
	// The chain before any component is known, measured over the same link.
	chain, err := measureReleaseChain(ctx, s.wan.Host, "ocp/release", s.r1.Digest.String(), 3)
	if err != nil {
		return rows, err
	}
	run := func(what, isc string, unique int64) (Row, error) {
		args := []string{"mirror", "-c", isc, "--workspace", ws, location.Docker(dst.Addr() + "/mirror").String(), "--dest-tls-verify=false", "--src-tls-verify=false"}
		if cfg.ParallelImages > 0 {
			args = append(args, "--parallel-images", fmt.Sprint(cfg.ParallelImages))
		}
		if cfg.ParallelLayers > 0 {
			args = append(args, "--parallel-layers", fmt.Sprint(cfg.ParallelLayers))
		}
		s0, d0, w0 := s.src.Proxy.Counts(), dst.Proxy.Counts(), s.wan.Stats()
		c0, sc0, dc0 := selfCPU(), s.src.CPU(), dst.CPU()
		cfg.Log.Info("measuring", "what", what)
		runs++
		s.timeline.start(time.Now())
		m, err := Exec(ctx, Command{Name: cfg.Airlock, Args: args, Env: s.env})
		reqs := s.timeline.stop()
		if err != nil {
			return Row{}, err
		}
		tl := milestones(reqs, "ocp/release", "ocp/art-dev")
		if err := writeTimelineFile(filepath.Join(work, fmt.Sprintf("release-timeline-%d.txt", runs)), reqs); err != nil {
			return Row{}, err
		}
		ds, dd, ws := s.src.Proxy.Counts().Sub(s0), dst.Proxy.Counts().Sub(d0), s.wan.Stats()
		idle := ws.Idle.Sub(w0.Idle)
		cfg.Log.Info("release run's link", "what", what, "wall", m.Wall.Round(time.Millisecond), "cpu client", m.CPU().Round(time.Millisecond),
			"cpu bench (simulator, proxies)", (selfCPU() - c0).Round(time.Millisecond), "cpu source", (s.src.CPU() - sc0).Round(time.Millisecond),
			"cpu destination", (dst.CPU() - dc0).Round(time.Millisecond), "requests", len(reqs), "timeline", tl.String(), "idle", idle.String())
		timeline = tl
		// Blob bodies the CDN served from the source's files did not pass
		// its proxy.
		files := ws.BlobFileBytes - w0.BlobFileBytes
		ds.BytesOut += files
		ds.BlobBytesOut += files
		r := Row{Name: what, Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(), Pulled: ds.BytesOut, Pushed: dd.BytesIn, Counted: true,
			Blobs: fmt.Sprintf("%d (%d)", dd.BlobsCommitted, dd.Mounted), Requests: fmt.Sprintf("%d / %d", ws.Requests-w0.Requests, dd.Requests),
			Note: fmt.Sprintf("link %s; over the link: %d connections, %d token requests, %d CDN redirects; blob bytes pulled / unique %.2f, uploaded / unique %.2f",
				s.wc, ws.Connections-w0.Connections, ws.TokenRequests-w0.TokenRequests, ws.Redirects-w0.Redirects,
				float64(ds.BlobBytesOut)/float64(unique), float64(dd.UploadBytesIn)/float64(unique)) + "; " + timeline.String() + "; " + idle.String()}
		if ds.BlobBytesOut > 0 {
			r.Throughput = Rate(ds.BlobBytesOut, m.Wall)
		}
		if m.Exit != 0 {
			r.Note = fmt.Sprintf("FAILED (exit %d): %s", m.Exit, lastLine(m.Stderr))
			return r, fmt.Errorf("%s: exit %d: %s", what, m.Exit, lastLine(m.Stderr))
		}
		return r, nil
	}
	name := "release m2m over " + link
	first, err := firstZStreams(max(1, cfg.ReleaseRuns), fresh, func() (Row, error) {
		return run(name+", first z-stream ("+s.r1.Version+")", isc1, s.r1.UniqueBytes)
	})
	rows = append(rows, first)
	if err != nil {
		return rows, err
	}
	if s.wc.Bandwidth > 0 {
		floor := time.Duration(float64(s.r1.UniqueBytes) / float64(s.wc.Bandwidth) * float64(time.Second))
		x := float64(first.Wall) / float64(floor)
		rows = append(rows, Row{Name: name + ", first z-stream / link floor (unique bytes / cap)", Input: input, WallText: fmt.Sprintf("%.2f×", x),
			Note: fmt.Sprintf("floor %s = %s / %.0f MB/s; no client reaches it: the components are known only after the dependent chain (the next row)", Seconds(floor), Bytes(s.r1.UniqueBytes), float64(s.wc.Bandwidth)/1e6)})
		rest := time.Duration(float64(s.r1.UniqueBytes-chain.Bytes) / float64(s.wc.Bandwidth) * float64(time.Second))
		x = float64(first.Wall) / float64(chain.Took+rest)
		rows = append(rows, Row{Name: name + ", first z-stream / chain + bytes floor", Input: input, WallText: fmt.Sprintf("%.2f×", x),
			Target: fmt.Sprintf("≤ %.2f×", releaseLinkTarget), Met: met(x <= releaseLinkTarget),
			Note: fmt.Sprintf("floor %s = the dependent chain %s (challenge, token, payload manifest, then its config and layers at once: %s, measured over the link, median of 3) + the other %s / %.0f MB/s",
				Seconds(chain.Took+rest), Seconds(chain.Took), Bytes(chain.Bytes), Bytes(s.r1.UniqueBytes-chain.Bytes), float64(s.wc.Bandwidth)/1e6)})
	}
	d0 := dst.Proxy.Counts()
	second, err := run(name+", second z-stream ("+s.r2.Version+", maxVersion raised)", isc2, s.increment)
	rows = append(rows, second)
	if err != nil {
		return rows, err
	}
	sent := dst.Proxy.Counts().Sub(d0).UploadBytesIn
	x := float64(sent) / float64(s.increment)
	rows = append(rows, Row{Name: name + ", second z-stream: bytes sent / its unique bytes", Input: input, WallText: fmt.Sprintf("%.2f×", x),
		Target: fmt.Sprintf("≤ %.1f×", releaseIncrementTarget), Met: met(x <= releaseIncrementTarget),
		Note: fmt.Sprintf("%s uploaded to the destination; %s of blobs in %s and not in %s", Bytes(sent), Bytes(s.increment), s.r2.Version, s.r1.Version)})
	or, err := ocMirrorOverLink(ctx, cfg, ocMirrorRun{Name: "oc-mirror v2 release m2m over " + link + " (" + s.r1.Version + ")", Target: ocMirrorReleaseTarget, Env: s.env,
		DstRoot: filepath.Join(s.storage, "oc-mirror-dst")},
		link, s.wc, s.wan, s.src, isc1, filepath.Join(work, "oc-mirror"), input, s.r1.UniqueBytes, first.Wall)
	return append(rows, or...), err
}

// setUpRelease starts the source registry and the WAN simulator in front
// of it, pushes the two z-streams named at the simulator's address, signs
// them with a throwaway key into a signature store and serves their graph.
func setUpRelease(ctx context.Context, cfg Config, link, work string) (*releaseSetup, error) {
	wc, err := registrytest.WANPreset(link)
	if err != nil {
		return nil, err
	}
	s := &releaseSetup{wc: wc}
	wc.Observe = s.timeline.observe
	var stops []func()
	s.stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	ok := false
	defer func() {
		if !ok {
			s.stop()
		}
	}()
	var remove func()
	if s.storage, s.storageDesc, remove, err = releaseStorage(cfg.ReleaseStorage, work); err != nil {
		return nil, err
	}
	stops = append(stops, remove)
	if s.src, err = StartRegistry(ctx, cfg.Registry, filepath.Join(s.storage, "src")); err != nil {
		return nil, err
	}
	stops = append(stops, s.src.Stop)
	// The CDN serves the blobs from the source's files: the source registry
	// and its counting proxy spent 2 and about 1 CPU-s a first z-stream
	// serving them (4 MiB read buffer and storage lookups per blob read, a
	// second loopback hop), on the two cores the client and the destination
	// share; the link, not that, is what the row measures.
	wc.BlobRoot = s.src.Root
	if s.wan, err = registrytest.StartWAN(s.src.Addr(), wc); err != nil {
		return nil, err
	}
	stops = append(stops, func() { _ = s.wan.Close() })
	host := s.wan.Host
	w := cfg.ReleaseWorkload
	t0 := time.Now()
	// Seeded straight into the registry (its own address), named at the
	// simulator's: the tools pull over the link.
	if s.r1, err = releasetest.Build(ctx, host, releasetest.Spec{Version: "4.15.1", Components: w.Components, LayerSize: w.LayerSize, PushTo: hostOf(s.src.URL)}); err != nil {
		return nil, err
	}
	if s.r2, err = releasetest.Build(ctx, host, releasetest.Spec{Version: "4.15.2", Previous: []string{"4.15.1"}, Components: w.Components,
		Changed: w.Changed, LayerSize: w.LayerSize, PushTo: hostOf(s.src.URL)}); err != nil {
		return nil, err
	}
	for d, n := range s.r2.Blobs {
		if _, ok := s.r1.Blobs[d]; !ok {
			s.increment += n
		}
	}
	cfg.Log.Info("seeded the release workload", "took", time.Since(t0).Round(time.Millisecond), "first", Bytes(s.r1.UniqueBytes), "new in the second", Bytes(s.increment))
	env, stop, err := serveReleases(work, releaseChannel, s.r1, s.r2)
	if err != nil {
		return nil, err
	}
	stops = append(stops, stop)
	s.env = env
	if s.increment == 0 {
		return nil, errors.New("release workload: the second z-stream has no blob of its own (-release-changed > 0)")
	}
	ok = true
	return s, nil
}

// serveReleases serves, on 127.0.0.1, the update graph of channel (the
// releases rs in order, each updating to the next) and a signature store
// holding a signature of each by a throwaway key written under work; it
// returns the environment that points airlock (and oc-mirror) at them:
// UPDATE_URL_OVERRIDE, OCP_SIGNATURE_URL, OCP_SIGNATURE_VERIFICATION_PK.
func serveReleases(work, channel string, rs ...releasetest.Release) ([]string, func(), error) {
	key, err := signtest.GenerateReleaseKey("rsa")
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, nil, err
	}
	keyFile := filepath.Join(work, "release-key.asc")
	if err := os.WriteFile(keyFile, key.Armored, 0o644); err != nil {
		return nil, nil, err
	}
	sigs := filepath.Join(work, "signatures")
	var nodes []releasetest.Node
	for _, r := range rs {
		b, err := key.Sign(signtest.SimpleSigning(r.Ref, r.Digest))
		if err != nil {
			return nil, nil, err
		}
		dir := filepath.Join(sigs, string(digest.SHA256)+"="+r.Digest.Encoded())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "signature-1"), b, 0o644); err != nil {
			return nil, nil, err
		}
		nodes = append(nodes, releasetest.Node{Version: r.Version, Payload: r.PayloadRef()})
	}
	graph := releasetest.Graph(channel, nodes...)
	mux := http.NewServeMux()
	mux.Handle("/signatures/", http.StripPrefix("/signatures/", http.FileServer(http.Dir(sigs))))
	mux.HandleFunc("/graph", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("channel") != channel {
			_, _ = w.Write([]byte(`{"nodes":[],"edges":[]}`))
			return
		}
		_, _ = w.Write(graph)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	return []string{"UPDATE_URL_OVERRIDE=" + base + "/graph", "OCP_SIGNATURE_URL=" + base + "/signatures/", "OCP_SIGNATURE_VERIFICATION_PK=" + keyFile},
		func() { _ = srv.Close() }, nil
}

// firstZStreams runs the first z-stream n times, each after fresh(i) has
// given it a new destination and workspace, and returns the row of the
// median wall with every run's wall in its note: the row moves by a second
// from one run to the next on a quiet machine.
func firstZStreams(n int, fresh func(int) error, run func() (Row, error)) (Row, error) {
	var all []Row
	for i := 0; i < n; i++ {
		if err := fresh(i); err != nil {
			return Row{}, err
		}
		r, err := run()
		if err != nil {
			return r, err
		}
		all = append(all, r)
	}
	if n == 1 {
		return all[0], nil
	}
	walls := make([]string, len(all))
	for i, r := range all {
		walls[i] = Seconds(r.Wall)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Wall < all[j].Wall })
	m := all[len(all)/2]
	m.Note = fmt.Sprintf("median of %d runs, each into a fresh destination (%s, in order); ", n, strings.Join(walls, ", ")) + m.Note
	return m, nil
}
