package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/internal/testutil/airlockbin"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/testgc"
)

// The test binary doubles as a child process that allocates memory.
func TestMain(m *testing.M) {
	if os.Getenv("BENCH_TEST_ALLOC") == "1" {
		b := make([]byte, 200<<20)
		for i := range b {
			b[i] = byte(i)
		}
		os.Stdout.Write(b[len(b)-1:])
		os.Exit(3)
	}
	testgc.Tune()
	code := m.Run()
	airlockbin.Remove()
	os.Exit(code)
}

func TestExecMeasuresTheChild(t *testing.T) {
	m, err := Exec(context.Background(), Command{Name: os.Args[0], Env: []string{"BENCH_TEST_ALLOC=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Exit != 3 {
		t.Errorf("exit %d, want 3", m.Exit)
	}
	if m.MaxRSS < 200<<20 {
		t.Errorf("peak RSS %d, want at least the 200 MiB the child touched", m.MaxRSS)
	}
	if m.Wall <= 0 || m.CPU() <= 0 {
		t.Errorf("wall %v, CPU %v", m.Wall, m.CPU())
	}
	if _, err := Exec(context.Background(), Command{Name: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("a missing binary did not fail")
	}
	var out bytes.Buffer
	m, err = Exec(context.Background(), Command{Name: "sh", Args: []string{"-c", "echo out; echo err >&2"}, Stdout: &out})
	if err != nil || m.Exit != 0 || out.String() != "out\n" || m.Stdout != "" || m.Stderr != "err\n" {
		t.Errorf("redirect: %v, exit %d, out %q, captured %q, stderr %q", err, m.Exit, out.String(), m.Stdout, m.Stderr)
	}
}

func TestProcAccounting(t *testing.T) {
	t0 := time.Now()
	x := 0
	for time.Since(t0) < 50*time.Millisecond {
		x++
	}
	_ = x
	if c := procCPU(os.Getpid()); c <= 0 {
		t.Errorf("procCPU = %v", c)
	}
	if r := procRSS(os.Getpid()); r <= 0 {
		t.Errorf("procRSS = %d", r)
	}
	if c := procCPU(-1); c != 0 {
		t.Errorf("procCPU of no process = %v", c)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 10}
	for i := 0; i < 100; i++ {
		io.WriteString(tb, "0123456789")
	}
	io.WriteString(tb, "abc")
	if got := tb.String(); got != "3456789abc" {
		t.Errorf("tail %q", got)
	}
}

func TestProxyCounts(t *testing.T) {
	reg := registrytest.Start(t)
	p, err := StartProxy(reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	o, _ := workload.Preset("tiny")
	w, err := workload.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := w.Push(context.Background(), workload.PushOptions{Registry: p.Addr, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	c := p.Counts()
	if c.BlobsCommitted != int64(st.Blobs) || c.UploadBytesIn != st.BlobBytes || c.Mounted != ps.Mounts {
		t.Errorf("proxy counted %d blobs, %d bytes, %d mounts; pushed %d, %d, %d", c.BlobsCommitted, c.UploadBytesIn, c.Mounted, st.Blobs, st.BlobBytes, ps.Mounts)
	}
	if c.ManifestPUT != ps.Manifests || c.Requests != ps.Requests {
		t.Errorf("proxy counted %d manifests, %d requests; client %d, %d", c.ManifestPUT, c.Requests, ps.Manifests, ps.Requests)
	}
	if c.BytesIn != st.BlobBytes+manifestBytesPushed(w) {
		t.Errorf("bytes in %d, want blobs %d + manifests %d", c.BytesIn, st.BlobBytes, manifestBytesPushed(w))
	}
	if p.FirstUploadByte().IsZero() {
		t.Error("FirstUploadByte is zero after uploads")
	}
	if want := reg.Counts(); want.BlobsCommitted != c.BlobsCommitted || want.BytesUploaded != c.UploadBytesIn {
		t.Errorf("registry saw %d blobs, %d bytes; proxy %d, %d", want.BlobsCommitted, want.BytesUploaded, c.BlobsCommitted, c.UploadBytesIn)
	}

	// Pulling a blob through the proxy counts its bytes.
	b := w.Blobs()[0]
	resp, err := http.Get("http://" + p.Addr + "/v2/" + w.Tags[0].Repo + "/blobs/" + b.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := p.Counts().Sub(c)
	if resp.StatusCode == http.StatusOK && (d.BlobGET != 1 || d.BlobBytesOut != n || d.BytesOut != n || d.Requests != 1) {
		t.Errorf("after one blob GET of %d bytes: %+v", n, d)
	}
}

// manifestBytesPushed sums the manifests Push sends: an index's children once
// per repository, every tag once.
func manifestBytesPushed(w *workload.Workload) int64 {
	var n int64
	seen := map[string]bool{}
	for _, t := range w.Tags {
		for _, c := range t.Manifest.Children {
			if k := t.Repo + c.Digest.String(); !seen[k] {
				seen[k] = true
				n += int64(len(c.Raw))
			}
		}
		n += int64(len(t.Manifest.Raw))
	}
	return n
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/airlock-mirror/airlock/prune
cpu: AMD EPYC
BenchmarkLoad/gen-large-2         	       1	 405123456 ns/op	2322.93 MB/s	29900000 B/op	  564823 allocs/op
BenchmarkValidate-2   	       1	  15000000 ns/op	       745.0 bundles	 4514800 B/op	   86654 allocs/op
PASS
ok  	github.com/airlock-mirror/airlock/prune	3.1s
# github.com/airlock-mirror/airlock/mirror
mirror/copy.go:1:1: syntax error
FAIL	github.com/airlock-mirror/airlock/mirror [build failed]
`
	rows, failed := parseGoBench(out, "1x")
	if len(rows) != 3 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	if rows[0].Name != "prune.BenchmarkLoad/gen-large" || rows[0].Wall != 405123456 || rows[0].Throughput != "2322.93 MB/s" ||
		!strings.Contains(rows[0].Note, "564823 allocs/op") {
		t.Errorf("row 0: %+v", rows[0])
	}
	if rows[1].Name != "prune.BenchmarkValidate" || !strings.Contains(rows[1].Note, "745.0 bundles") {
		t.Errorf("row 1: %+v", rows[1])
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "mirror") || !strings.HasPrefix(rows[2].Note, "FAILED") {
		t.Errorf("failed %v, row 2 %+v", failed, rows[2])
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Seconds(0), ""},
		{Seconds(1500 * time.Microsecond), "2 ms"},
		{Seconds(1234 * time.Millisecond), "1.23 s"},
		{Seconds(173 * time.Second), "173 s"},
		{Bytes(-1), ""},
		{Bytes(999), "999 B"},
		{Bytes(64_000), "64.0 kB"},
		{Bytes(8_000_000), "8.0 MB"},
		{Bytes(1_716_262_620), "1.72 GB"},
		{MiB(0), ""},
		{MiB(97 << 20), "97 MiB"},
		{MiB(9 << 30), "9216 MiB"},
		{MiB(12 << 30), "12.0 GiB"},
		{Rate(1e9, time.Second), "1000 MB/s"},
		{Rate(0, time.Second), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	err := WriteTable(&b, []Row{
		heading("catalog: x"),
		{Name: "validate", Input: "a|b", Wall: 2 * time.Second, RSS: 100 << 20, CPU: time.Second, Target: "< 10 s", Met: "yes"},
		{Name: "m2m", Input: "w", Wall: time.Second, CPU: time.Second, RegCPU: 2 * time.Second, Pulled: 5e6, Pushed: 0, Counted: true},
		{Name: "ratio", Input: "w", WallText: "1.10×"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	want := []string{
		"| **catalog: x** |",
		`| validate | a\|b | 2.00 s | 100 MiB | 1.00 s | – | – | – | – | – | < 10 s | yes | – |`,
		"| m2m | w | 1.00 s | – | 1.00 s / 2.00 s | – | 5.0 MB | 0 B | – | – | – | – | – |",
		"| ratio | w | 1.10× |",
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i+2], w) {
			t.Errorf("line %d:\n got %s\nwant %s…", i+2, lines[i+2], w)
		}
	}
	for _, l := range lines {
		if strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") != 14 {
			t.Errorf("line has the wrong number of cells: %s", l)
		}
	}
}

// TestRunEndToEnd builds airlock and runs a tiny benchmark: the small
// generated catalog and the tiny copy workload. The airlock it measures is
// built with -race (airlockbin.Build), the registries it measures against
// without (BuildWithoutRace).
func TestRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds airlock and runs registries")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bin := airlockbin.Build(t)
	o, _ := workload.Preset("tiny")
	docs := filepath.Join(work, "benchmarks.md")
	os.WriteFile(docs, []byte("# Benchmarks\n"), 0o644)
	var out bytes.Buffer
	_, hasSkopeo := exec.LookPath("skopeo")
	res, err := Run(context.Background(), Config{
		RepoRoot: root, Airlock: bin, Registry: airlockbin.BuildWithoutRace(t), WorkDir: work, Quick: true, Catalogs: []string{"small"}, Count: 1,
		Copy: true, Workload: o, CopyMode: "catalog", Skopeo: hasSkopeo == nil, FloorParallel: 4,
		Out: &out, Docs: docs, Results: filepath.Join(work, "results"), Note: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) > 0 {
		t.Fatalf("failures: %v\n%s", res.Failures, out.String())
	}
	table := out.String()
	for _, want := range []string{"quick run (test)", "catalog validate", "catalog prune heads-only", "airlock mirror m2m, first run",
		"airlock mirror m2m, no-op re-run", "ingestion floor", "airlock mirror m2d", "airlock mirror d2m", "airlock m2m / ingestion floor", "copy floor", "airlock m2m / copy floor",
		"loopback: client CPU per GB copied", "loopback: destination requests per blob"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	get := func(name string) Row {
		for _, r := range res.Rows {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no row %q", name)
		return Row{}
	}
	o.TagRefs = true // as the copy section's catalog names its images
	w, _ := workload.New(o)
	w.AddCatalog("x")
	st := w.Stats()
	if r := get("airlock mirror m2m, first run"); r.Met != "yes" || r.Pulled < st.BlobBytes*9/10 || r.Pushed < st.BlobBytes*9/10 {
		t.Errorf("m2m: %+v", r)
	}
	if r := get("airlock mirror m2m, no-op re-run"); !strings.HasPrefix(r.Blobs, "0 ") || r.Pushed != 0 {
		t.Errorf("no-op re-run sent something: %+v", r)
	}
	if r := get("ingestion floor (minimal client: each blob and manifest pushed once, parallel)"); r.Pushed < st.BlobBytes {
		t.Errorf("floor pushed %d bytes, want at least %d", r.Pushed, st.BlobBytes)
	}
	// The copy floor reads every blob it sends from the source, once.
	if r := get("copy floor (the same, each blob read from the source: GET streamed into the upload, unverified)"); r.Pushed < st.BlobBytes || r.Pulled < st.BlobBytes || r.Pulled > st.BlobBytes*11/10 {
		t.Errorf("copy floor pulled %d and pushed %d bytes, want about %d each", r.Pulled, r.Pushed, st.BlobBytes)
	}
	// The disk floors: every blob read once and written into the file; pushed
	// from it once; both ratios printed.
	if r := get("mirror-to-disk floor (each blob read from the source, hashed, written into one file at its place; synced)"); r.Pushed != r.Pulled || r.Pulled < st.BlobBytes*9/10 || r.Pulled > st.BlobBytes*11/10 {
		// (st counts a catalog naming host "x": a few bytes less than the real one)
		t.Errorf("mirror-to-disk floor pulled %d and wrote %d bytes, want about %d each", r.Pulled, r.Pushed, st.BlobBytes)
	}
	if r := get("disk-to-mirror floor (each blob read from that file, hashed, pushed once; manifests from memory)"); r.Pushed < st.BlobBytes {
		t.Errorf("disk-to-mirror floor pushed %d bytes, want at least %d", r.Pushed, st.BlobBytes)
	}
	for _, name := range []string{"airlock m2d / mirror-to-disk floor (wall)", "airlock d2m / disk-to-mirror floor (wall)"} {
		if r := get(name); !strings.HasSuffix(r.WallText, "×") || r.Target != "≤ 1.30×" {
			t.Errorf("%s: %+v", name, r)
		}
	}
	b, _ := os.ReadFile(docs)
	if !strings.HasPrefix(string(b), "# Benchmarks\n\n"+beginCurrent) || !strings.Contains(string(b), "| airlock mirror m2m, first run |") {
		t.Errorf("current tables not written:\n%s", b)
	}
	if runs, _ := filepath.Glob(filepath.Join(work, "results", "*.md")); len(runs) != 1 {
		t.Errorf("runs recorded: %v, want one", runs)
	}
}

func FuzzParseGoBench(f *testing.F) {
	f.Add("pkg: github.com/airlock-mirror/airlock/prune\nBenchmarkLoad-2 1 405 ns/op 2.5 MB/s 30 B/op 5 allocs/op\nPASS\n")
	f.Add("FAIL\tgithub.com/x [build failed]\nBenchmarkX-2 1 NaN ns/op\n")
	f.Add("Benchmark 1 2 ns/op x\nFAIL\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, failed := parseGoBench(s, "1x")
		if len(failed) > len(rows) {
			t.Errorf("%d failures but %d rows", len(failed), len(rows))
		}
		var b strings.Builder
		if err := WriteTable(&b, rows); err != nil {
			t.Fatal(err)
		}
	})
}
