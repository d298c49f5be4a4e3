package pipeline_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/pipeline"
)

// faultRuns is how many runs of each workflow each fault kind gets: 10 for the
// full measure (AIRLOCK_FAULT_RUNS=10, docs/copy.md), 2 by default so that
// `make test` (race detector on) stays within its budget; -short runs 1.
func faultRuns(t *testing.T) int { return runsFromEnv(t, "AIRLOCK_FAULT_RUNS", 2, 1) }

// runsFromEnv is how many runs a repeated fault test gets: the positive number
// in $env when set, otherwise def, or short with -short.
func runsFromEnv(t *testing.T, env string, def, short int) int {
	if s := os.Getenv(env); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", env, s)
		}
		return n
	}
	if testing.Short() {
		return short
	}
	return def
}

// faultSource is a source registry behind a fault-injecting proxy; everything
// was seeded through the proxy, so the catalog names images by the proxy's host.
type faultSource struct {
	reg   *registrytest.Registry
	proxy *registrytest.Proxy
	cfg   string
}

var faultKinds = []registrytest.Fault{registrytest.TooManyRequests, registrytest.Unavailable, registrytest.CutMidBody, registrytest.TruncateBody, registrytest.FlipByte}

func newFaultSource(t *testing.T, kind registrytest.Fault, seedN uint64) *faultSource {
	t.Helper()
	reg := registrytest.Start(t)
	proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{
		Match: func(*http.Request) bool { return true }, Kinds: []registrytest.Fault{kind}, Seed: seedN, RetryAfter: "0",
	})
	res, err := seed.Seed(context.Background(), seed.Options{
		Registry: proxy.Host(), CatalogDir: e2eCatalog, CatalogRepo: "faults/index",
		CatalogTag: "v1", MultiArchEvery: 3, Insecure: true, WorkDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for i := 0; i < 6; i++ {
		ref := fmt.Sprintf("%s/tools/t%d:1.0", proxy.Host(), i)
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: 500 + uint64(i), BaseSeed: 3, BaseLayers: 2, Layers: 1, LayerSize: 64 << 10})
		extra = append(extra, "  - name: "+ref)
	}
	cfg := fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: %s\n  additionalImages:\n%s\n",
		res.Catalog, strings.Join(extra, "\n"))
	return &faultSource{reg: reg, proxy: proxy, cfg: writeCfg(t, cfg)}
}

// TestFaultInjection runs mirror-to-mirror and mirror-to-disk → disk-to-mirror
// with 10% of the requests to the source, then (separately) to the destination,
// answered 429 (Retry-After), 503, cut mid-body, cut short, or with a flipped
// byte (request bodies too: uploads and manifest pushes). Every run must finish
// in one invocation with everything at the destination by its source digest,
// checked with go-containerregistry's client, not airlock's. Each row must have
// met faults of its kind that changed what was sent (the proxy's Injected, not
// its draws), or it proved nothing and fails.
//
// The rows are independent (each its own registries and proxies) and run in
// parallel; the table is logged when the last has finished.
func TestFaultInjection(t *testing.T) {
	t.Parallel()
	runs := faultRuns(t)
	var table syncTable
	t.Cleanup(func() {
		t.Logf("fault suite (%d runs of each workflow per row):\n| fault | side | runs | faults injected | requests through the proxy | time |\n|---|---|--:|--:|--:|--:|\n%s", runs, table.String())
	})
	for _, kind := range faultKinds {
		for _, side := range []string{"source", "destination"} {
			t.Run(kind.String()+"/"+side, func(t *testing.T) {
				t.Parallel()
				src := newFaultSource(t, kind, uint64(kind)*7919)
				var st faultStats
				for i := 0; i < runs; i++ {
					runFaultCase(t, src, side, kind, uint64(i), &st)
				}
				if st.faults == 0 {
					t.Fatalf("%s faults at the %s: none was injected in %d runs of each workflow (%d requests through the proxy): the row tested nothing", kind, side, runs, st.requests)
				}
				table.add(fmt.Sprintf("| %s | %s | %d | %d | %d | %.1f s |", kind, side, 2*runs, st.faults, st.requests, st.elapsed.Seconds()))
			})
		}
	}
}

// syncTable collects the rows of a table from parallel subtests.
type syncTable struct {
	mu   sync.Mutex
	rows []string
}

func (s *syncTable) add(row string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, row)
}

// String is the rows in order, one a line.
func (s *syncTable) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := slices.Clone(s.rows)
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

type faultStats struct {
	faults, requests int
	elapsed          time.Duration
}

// injected is how many faults of kind the proxy injected since before (its
// Injected counts then).
func injected(p *registrytest.Proxy, kind registrytest.Fault, before map[registrytest.Fault]int) int {
	return p.Injected()[kind] - before[kind]
}

func runFaultCase(t *testing.T, src *faultSource, side string, kind registrytest.Fault, seedN uint64, st *faultStats) {
	t.Helper()
	ctx := context.Background()
	dst := registrytest.Start(t)
	dproxy := registrytest.NewFaultProxy(t, dst.Host(), registrytest.FaultPlan{
		Match: func(*http.Request) bool { return true }, Kinds: []registrytest.Fault{kind}, Seed: seedN, RetryAfter: "0",
	})
	faulty := src.proxy
	if side == "destination" {
		faulty = dproxy
		src.proxy.SetRate(0)
	}
	faulty.SetRate(0.10)
	defer faulty.SetRate(0)
	before := faulty.Requests()
	beforeInjected := faulty.Injected()
	start := time.Now()

	o := faultOpts(src.cfg)
	o.Destination.Location = location.Docker(dproxy.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	res, err := pipeline.Mirror(ctx, o)
	if err != nil || res.Failed != 0 {
		t.Fatalf("mirror-to-mirror with %s faults at the %s: %v%s", kind, side, err, failures(res))
	}
	checkIndependently(t, res, dproxy.Host(), dst.Host())
	n := injected(faulty, kind, beforeInjected)
	t.Logf("mirror-to-mirror: %d %s faults injected at the %s", n, kind, side)
	st.faults += n
	st.requests += faulty.Requests() - before

	// The air gap: the faulty side is the source for mirror-to-disk, the
	// destination for disk-to-mirror.
	dst2 := registrytest.Start(t)
	dproxy2 := registrytest.NewFaultProxy(t, dst2.Host(), registrytest.FaultPlan{
		Match: func(*http.Request) bool { return true }, Kinds: []registrytest.Fault{kind}, Seed: seedN + 1000, RetryAfter: "0",
	})
	if side == "destination" {
		faulty.SetRate(0)
		faulty = dproxy2
		faulty.SetRate(0.10)
	}
	before, beforeInjected = faulty.Requests(), faulty.Injected()
	arch := t.TempDir()
	o = faultOpts(src.cfg)
	o.Destination.Location = location.File(arch)
	if res, err := pipeline.Mirror(ctx, o); err != nil || res.Failed != 0 {
		t.Fatalf("mirror-to-disk with %s faults at the %s: %v%s", kind, side, err, failures(res))
	}
	o = faultOpts(src.cfg)
	o.Archive.From = location.File(arch)
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dproxy2.Host() + "/mirror")
	res, err = pipeline.Mirror(ctx, o)
	if err != nil || res.Failed != 0 {
		t.Fatalf("disk-to-mirror with %s faults at the %s: %v%s", kind, side, err, failures(res))
	}
	checkIndependently(t, res, dproxy2.Host(), dst2.Host())
	n = injected(faulty, kind, beforeInjected)
	t.Logf("mirror-to-disk then disk-to-mirror: %d %s faults injected at the %s", n, kind, side)
	st.faults += n
	st.requests += faulty.Requests() - before
	st.elapsed += time.Since(start)
}

func total(m map[registrytest.Fault]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkIndependently reads every planned image back from the destination
// registry itself (not through the proxy) with go-containerregistry: each
// manifest by digest and by tag, each blob of each manifest re-hashed, and
// checks results.json never says copied for something not there.
func checkIndependently(t *testing.T, res *pipeline.Result, via, direct string) {
	t.Helper()
	for _, im := range res.Plan.Images {
		repo := direct + strings.TrimPrefix(im.DestRepo, via)
		ref, err := name.ParseReference(repo+"@"+im.Digest.String(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		checkTree(t, ref)
		for _, tag := range im.Tags {
			tr, _ := name.ParseReference(repo+":"+tag, name.Insecure)
			d, err := remote.Head(tr)
			if err != nil || d.Digest.String() != im.Digest.String() {
				t.Errorf("tag %s: %v (%v), want %s", tr, d, err, im.Digest)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(res.WorkingDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rj struct {
		Images []pipeline.ImageOutcome `json:"images"`
	}
	if err := json.Unmarshal(b, &rj); err != nil {
		t.Fatal(err)
	}
	for _, o := range rj.Images {
		if o.Status != "copied" && o.Status != "skipped" {
			t.Errorf("results.json: %s is %s: %s", o.Source, o.Status, o.Error)
			continue
		}
		repo := direct + strings.TrimPrefix(o.Destination, via)
		if i := strings.LastIndexAny(repo, ":@"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i]
		}
		ref, _ := name.ParseReference(repo+"@"+o.Digest, name.Insecure)
		if _, err := remote.Head(ref); err != nil {
			t.Errorf("results.json says %s for %s, the destination does not hold %s: %v", o.Status, o.Source, ref, err)
		}
	}
}

// checkTree fetches ref's manifest and everything it references, re-hashing
// every byte.
func checkTree(t *testing.T, ref name.Reference) {
	t.Helper()
	desc, err := remote.Get(ref)
	if err != nil {
		t.Errorf("%s: %v", ref, err)
		return
	}
	if got := sha(desc.Manifest); "sha256:"+got != ref.Identifier() {
		t.Errorf("%s: manifest content hashes to sha256:%s", ref, got)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			return
		}
		im, _ := idx.IndexManifest()
		for _, m := range im.Manifests {
			checkTree(t, ref.Context().Digest(m.Digest.String()))
		}
		return
	}
	img, err := desc.Image()
	if err != nil {
		t.Errorf("%s: %v", ref, err)
		return
	}
	m, _ := img.Manifest()
	blobs := append([]v1.Descriptor{m.Config}, m.Layers...)
	for _, b := range blobs {
		l, err := remote.Layer(ref.Context().Digest(b.Digest.String()))
		if err != nil {
			t.Errorf("%s blob %s: %v", ref, b.Digest, err)
			continue
		}
		rc, err := l.Compressed()
		if err != nil {
			t.Errorf("%s blob %s: %v", ref, b.Digest, err)
			continue
		}
		h := sha256.New()
		_, err = io.Copy(h, rc)
		rc.Close()
		if err != nil || "sha256:"+hex.EncodeToString(h.Sum(nil)) != b.Digest.String() {
			t.Errorf("%s blob %s: content does not match (%v)", ref, b.Digest, err)
		}
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func failures(res *pipeline.Result) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, o := range res.Images {
		if o.Error != "" {
			fmt.Fprintf(&b, "\n  %s: %s", o.Source, o.Error)
		}
	}
	return b.String()
}

// faultOpts are the default options (5 retries) with a short backoff, so that
// the suite measures retries, not sleeps.
func faultOpts(cfg string) pipeline.Options {
	o := opts(cfg)
	pipeline.SetRetry(&o, &retry.Policy{Times: retry.DefaultTimes, Base: 2 * time.Millisecond, Max: 20 * time.Millisecond})
	return o
}
