package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/airlockbin"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// airlockBinary builds cmd/airlock once per test binary, with its build flags.
func airlockBinary(t *testing.T) string { return airlockbin.Build(t) }

// airlockProc is one airlock process.
type airlockProc struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

func startAirlock(t *testing.T, args ...string) *airlockProc {
	t.Helper()
	p := &airlockProc{cmd: exec.Command(airlockBinary(t), args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=")
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *airlockProc) wait() (string, error) {
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return p.out.String(), err
	case <-time.After(3 * time.Minute):
		_ = p.cmd.Process.Kill()
		<-done
		return p.out.String(), fmt.Errorf("timed out")
	}
}

func runAirlock(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return startAirlock(t, args...).wait()
}

// tripProxy forwards to a registry; once armed, the first manifest PUT by tag
// it sees answered trips it: from then on, until released, it holds every request until
// its client goes away, so that a process killed then has sent whole images only.
type tripProxy struct {
	srv     *httptest.Server
	state   atomic.Int32 // proxyPass, proxyArmed, proxyHold
	tripped chan struct{}
	held    atomic.Int32  // requests being held
	stop    chan struct{} // closed at cleanup: every held request ends
}

const (
	proxyPass int32 = iota
	proxyArmed
	proxyHold
)

func newTripProxy(t *testing.T, target string) *tripProxy {
	u, _ := url.Parse("http://" + target)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &tripProxy{tripped: make(chan struct{}), stop: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.state.Load() == proxyHold {
			p.held.Add(1)
			defer p.held.Add(-1)
			// Read the body first: the server notices that its client
			// went away (the context ends) only once the body is read.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-p.stop: // httptest.Server.Close waits for this handler
			}
			return
		}
		rw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(rw, r)
		// A manifest PUT by tag comes last for an image.
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") && !strings.Contains(r.URL.Path, "/manifests/sha256:") && rw.code == http.StatusCreated &&
			p.state.CompareAndSwap(proxyArmed, proxyHold) {
			close(p.tripped)
		}
	}))
	t.Cleanup(func() { close(p.stop); p.srv.Close() })
	return p
}

// TestTripProxyReleasesAKilledClient: a client killed while the proxy holds
// its upload (a request with a body) ends the request, so that the proxy
// closes (TestShardedProcesses kills a shard that way).
func TestTripProxyReleasesAKilledClient(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer upstream.Close()
	p := newTripProxy(t, strings.TrimPrefix(upstream.URL, "http://"))
	p.state.Store(proxyArmed)
	req, _ := http.NewRequest(http.MethodPut, p.srv.URL+"/v2/a/manifests/v1", strings.NewReader("{}"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-p.tripped:
	default:
		t.Fatal("a manifest PUT by tag did not trip the proxy")
	}
	c, err := net.DialTimeout("tcp", p.host(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// An upload cut short: its client dies with most of the body unsent.
	fmt.Fprintf(c, "PATCH /v2/a/blobs/uploads/u HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n0123456789", p.host())
	waitHeld := func(want int32, what string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); p.held.Load() != want; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d requests held 20s %s, want %d", p.held.Load(), what, want)
			}
		}
	}
	waitHeld(1, "after the upload started")
	c.Close()
	waitHeld(0, "after its client died")
}

func (p *tripProxy) host() string { u, _ := url.Parse(p.srv.URL); return u.Host }

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }

// victim picks the shard to kill: one with at least two images that sends no
// blob another shard waits for (so that the others finish without it), and
// the most images among those.
func victim(t *testing.T, part *mirror.Partition, plan *mirror.Plan) int {
	t.Helper()
	awaited := map[digest.Digest]bool{}
	for _, sh := range part.Shards {
		for d := range sh.Elsewhere {
			awaited[d] = true
		}
	}
	best := -1
	for i, sh := range part.Shards {
		sends := false
		for _, k := range sh.Images {
			for _, b := range plan.Images[k].Blobs {
				if _, mine := sh.Elsewhere[b.Digest]; awaited[b.Digest] && !mine {
					sends = true
				}
			}
		}
		if !sends && len(sh.Images) >= 2 && (best < 0 || len(sh.Images) > len(part.Shards[best].Images)) {
			best = i
		}
	}
	if best < 0 {
		t.Fatalf("no shard to kill: %+v", part.Shards)
	}
	return best
}

// checkUnion reads the part of the plan each shard run wrote and checks that
// together they are the plan's shardable images, each once.
func checkUnion(t *testing.T, plan *mirror.Plan, planFiles []string) {
	t.Helper()
	done := map[string]int{}
	for _, f := range planFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p mirror.Plan
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		for _, im := range p.Images {
			done[im.DestRepo+"@"+im.Digest.String()]++
		}
	}
	checkDoneOnce(t, plan, done)
}

// checkDoneOnce checks that done (DEST@DIGEST → how many shards did it) holds
// every shardable image of the plan once, and nothing else.
func checkDoneOnce(t *testing.T, plan *mirror.Plan, done map[string]int) {
	t.Helper()
	want := 0
	for _, im := range plan.Images {
		if !mirror.Shardable(im) {
			continue
		}
		want++
		if k := im.DestRepo + "@" + im.Digest.String(); done[k] != 1 {
			t.Errorf("%s done by %d shards, want 1", k, done[k])
		}
	}
	if len(done) != want {
		t.Errorf("the shards did %d images, the plan has %d", len(done), want)
	}
}

// TestShardedProcesses is the acceptance test of sharding with every shard a
// separate airlock process, for N = 1, 2 and 4, mirror-to-mirror and
// mirror-to-disk (then disk-to-mirror): the plan is made once; every shard but
// one runs to the end; the remaining one is killed (SIGKILL) after it has
// written one image; --finish refuses and names it; run again it completes,
// finding what it wrote; --finish then succeeds. The shards' work is the plan's,
// each image once, and each distinct blob is sent (written) once across all
// shards.
func TestShardedProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the airlock binary")
	}
	airlockBinary(t)
	e := setup(t)
	cfg := shardConfig(t, e)
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("mirror-to-mirror shards=%d", n), func(t *testing.T) { t.Parallel(); shardedM2M(t, cfg, n) })
		t.Run(fmt.Sprintf("mirror-to-disk shards=%d", n), func(t *testing.T) { t.Parallel(); shardedM2D(t, cfg, n) })
	}
}

func shardedM2M(t *testing.T, cfg string, n int) {
	dst := registrytest.Start(t)
	proxy := newTripProxy(t, dst.Host())
	dest := location.Docker(proxy.host() + "/mirror").String()
	ws := func() string { return location.File(t.TempDir()).String() }
	planWS := t.TempDir()
	if out, err := runAirlock(t, "mirror", "-c", cfg, "--plan-only", "--workspace", location.File(planWS).String(), dest); err != nil {
		t.Fatalf("--plan-only: %v\n%s", err, out)
	}
	planFile := workspace.At(planWS).PlanPath()
	plan, part, err := mirror.PartitionFile(planFile, n)
	if err != nil {
		t.Fatal(err)
	}
	k := victim(t, part, plan)
	shardWS := make([]string, n)
	shard := func(i int, extra ...string) *airlockProc {
		if shardWS[i] == "" {
			shardWS[i] = t.TempDir()
		}
		args := append([]string{"mirror", "-c", cfg, "--plan", planFile, "--shard", fmt.Sprintf("%d/%d", i, n), "--workspace", location.File(shardWS[i]).String()}, extra...)
		return startAirlock(t, append(args, dest)...)
	}
	var procs []*airlockProc
	for i := range n {
		if i != k {
			procs = append(procs, shard(i))
		}
	}
	for _, p := range procs {
		if out, err := p.wait(); err != nil {
			t.Fatalf("shard: %v\n%s", err, out)
		}
	}
	// The victim, alone now: killed once it has pushed one image.
	proxy.state.Store(proxyArmed)
	kp := shard(k, "--parallel-images", "1", "--parallel-layers", "1")
	select {
	case <-proxy.tripped:
	case <-time.After(2 * time.Minute):
		t.Fatal("the shard to kill pushed no manifest")
	}
	_ = kp.cmd.Process.Kill()
	_, _ = kp.wait()
	proxy.state.Store(proxyPass)
	finish := func() (string, error) {
		return runAirlock(t, "mirror", "-c", cfg, "--plan", planFile, "--finish", "--workspace", ws(), dest)
	}
	if out, err := finish(); err == nil || !strings.Contains(out, "not at the destination") {
		t.Fatalf("--finish with shard %d killed: %v, want it refused\n%s", k, err, out)
	}
	// The killed shard run again completes.
	if out, err := shard(k).wait(); err != nil {
		t.Fatalf("killed shard run again: %v\n%s", err, out)
	}
	var res pipeline.Result
	readJSON(t, workspace.At(shardWS[k]).Shard(archive.ShardPart(k, n)).ResultsPath(), &res)
	if c := res.Counts(); c.Present < 1 || c.Failed != 0 || c.Copied < 1 {
		t.Errorf("killed shard run again: %+v, want what the killed run pushed found present and the rest copied", c)
	}
	var files []string
	for i := range n {
		files = append(files, workspace.At(shardWS[i]).Shard(archive.ShardPart(i, n)).PlanPath())
	}
	checkUnion(t, plan, files)
	if got := dst.Counts().Uploaded(); got != part.UniqueBytes {
		t.Errorf("registry received %d blob bytes from the shards, the plan's distinct blobs are %d (%.3fx)", got, part.UniqueBytes, float64(got)/float64(part.UniqueBytes))
	}
	if out, err := finish(); err != nil {
		t.Fatalf("--finish after every shard: %v\n%s", err, out)
	}
	reg := registry.New(registry.Options{})
	for _, im := range plan.Images {
		if im.Error != "" {
			continue
		}
		repo := strings.Replace(im.DestRepo, proxy.host(), dst.Host(), 1)
		if ok, err := reg.ManifestExists(context.Background(), repo, im.Digest.String(), im.Digest); !ok || err != nil {
			t.Errorf("%s@%s not at the destination: %v", repo, im.Digest, err)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func shardedM2D(t *testing.T, cfg string, n int) {
	target := t.TempDir()
	dest := location.File(target).String()
	if out, err := runAirlock(t, "mirror", "-c", cfg, "--plan-only", dest); err != nil {
		t.Fatalf("--plan-only: %v\n%s", err, out)
	}
	planFile := workspace.At(target).PlanPath()
	plan, part, err := mirror.PartitionFile(planFile, n)
	if err != nil {
		t.Fatal(err)
	}
	k := victim(t, part, plan)
	shard := func(i int, extra ...string) *airlockProc {
		args := append([]string{"mirror", "-c", cfg, "--plan", planFile, "--shard", fmt.Sprintf("%d/%d", i, n)}, extra...)
		return startAirlock(t, append(args, dest)...)
	}
	var procs []*airlockProc
	for i := range n {
		if i != k {
			procs = append(procs, shard(i))
		}
	}
	for _, p := range procs {
		if out, err := p.wait(); err != nil {
			t.Fatalf("shard: %v\n%s", err, out)
		}
	}
	batch := filepath.Join(target, archive.BatchName(1))
	// The victim is killed once its journal says it wrote an image's manifest.
	kp := shard(k, "--parallel-images", "1", "--parallel-layers", "1")
	journal := filepath.Join(batch, ".airlock-staging-"+archive.ShardPart(k, n), "journal.jsonl")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, _ := os.ReadFile(journal); bytes.Contains(b, []byte(`"op":"tag"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shard to kill wrote no manifest")
		}
		time.Sleep(2 * time.Millisecond)
	}
	_ = kp.cmd.Process.Kill()
	_, _ = kp.wait()
	finish := func() (string, error) {
		return runAirlock(t, "mirror", "-c", cfg, "--plan", planFile, "--finish", dest)
	}
	out, err := finish()
	if want := archive.ShardPart(k, n); err == nil || !strings.Contains(out, want) || !strings.Contains(out, "started, not finished") {
		t.Fatalf("--finish with shard %d killed: %v, want it refused naming %s, started, not finished\n%s", k, err, want, out)
	}
	if names, _ := filepath.Glob(filepath.Join(batch, "airlock_0*.tar")); len(names) != 0 {
		t.Fatalf("the refused --finish wrote chunks: %v", names)
	}
	if out, err := shard(k).wait(); err != nil {
		t.Fatalf("killed shard run again: %v\n%s", err, out)
	}
	var res pipeline.Result
	readJSON(t, filepath.Join(target, "working-dir", "shards", archive.ShardPart(k, n), "results.json"), &res)
	if c := res.Counts(); c.Present < 1 || c.Failed != 0 || c.Copied < 1 {
		t.Errorf("killed shard run again: %+v, want what the killed run wrote found present and the rest copied", c)
	}
	shards, err := archive.ReadShards(batch)
	if err != nil || len(shards.Done) != n {
		t.Fatalf("shard records: %v, %+v", err, shards)
	}
	var written int64
	for _, rec := range shards.Done {
		written += rec.BlobBytes()
	}
	if written != part.UniqueBytes {
		t.Errorf("the shards wrote %d blob bytes, the plan's distinct blobs are %d (%.3fx)", written, part.UniqueBytes, float64(written)/float64(part.UniqueBytes))
	}
	var files []string
	for i := range n {
		files = append(files, workspace.At(target).Shard(archive.ShardPart(i, n)).PlanPath())
	}
	checkUnion(t, plan, files)
	if out, err := finish(); err != nil {
		t.Fatalf("--finish after every shard: %v\n%s", err, out)
	}
	if out, err := runAirlock(t, "archive", "verify", batch); err != nil {
		t.Fatalf("archive verify: %v\n%s", err, out)
	}
	if out, err := runAirlock(t, "archive", "describe", batch); err != nil || !strings.Contains(out, "Catalogs:") {
		t.Fatalf("archive describe: %v\n%s", err, out)
	}
	// Disk-to-mirror loads it as any archive.
	dst := registrytest.Start(t)
	ws := t.TempDir()
	if out, err := runAirlock(t, "mirror", "-c", cfg, "--from", location.File(batch).String(), "--workspace", location.File(ws).String(), location.Docker(dst.Host()+"/mirror").String()); err != nil {
		t.Fatalf("disk-to-mirror: %v\n%s", err, out)
	}
	var loaded mirror.Plan
	readJSON(t, workspace.At(ws).PlanPath(), &loaded)
	reg := registry.New(registry.Options{})
	count := 0
	for _, im := range loaded.Images {
		count++
		if ok, err := reg.ManifestExists(context.Background(), im.DestRepo, im.Digest.String(), im.Digest); !ok || err != nil {
			t.Errorf("%s@%s not at the destination after disk-to-mirror: %v", im.DestRepo, im.Digest, err)
		}
	}
	if want := len(plan.Jobs()); count != want {
		t.Errorf("disk-to-mirror loaded %d images, the plan has %d", count, want)
	}
}
