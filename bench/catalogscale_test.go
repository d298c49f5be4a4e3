package bench

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/internal/testutil/airlockbin"
)

func TestSpans(t *testing.T) {
	t0 := time.Unix(100, 0)
	s := &spans{digest: "sha256:abc"}
	s.observe("GET", "/v2/bench/cat/blobs/sha256:abc", 307, t0.Add(time.Second), t0.Add(2*time.Second))
	s.observe("GET", "/blobs/sha256:abc", 200, t0.Add(2*time.Second), t0.Add(5*time.Second))
	s.observe("GET", "/v2/bench/app/blobs/sha256:other", 200, t0, t0.Add(9*time.Second))
	s.observe("GET", "/v2/bench/cat/manifests/sha256:abc", 200, t0, t0.Add(9*time.Second))
	if got := s.span(); got != 4*time.Second {
		t.Errorf("span = %v, want the 4s from the first request for the blob to the end of the last", got)
	}
}

// TestCatalogScaleEndToEnd runs the catalog-scale section on a tiny catalog
// over the lan link twice: the second run reuses the seeded cache.
func TestCatalogScaleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds airlock and runs registries")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bin := airlockbin.Build(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	o, _ := workload.Preset("tiny")
	o.Packages, o.OlderBundles = 2, 1
	cache := filepath.Join(work, "cache")
	run := func() *Result {
		var out bytes.Buffer
		res, err := Run(context.Background(), Config{
			RepoRoot: root, Airlock: bin, Registry: airlockbin.BuildWithoutRace(t), WorkDir: filepath.Join(work, "run"), Quick: true, Count: 1,
			Links: []string{"lan"}, CatalogWorkload: o, CatalogPreset: "tiny", CacheDir: cache, CatalogPort: port, Out: &out,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Failures) > 0 {
			t.Fatalf("failures: %v\n%s", res.Failures, out.String())
		}
		return res
	}
	res := run()
	markers, _ := filepath.Glob(filepath.Join(cache, "catalog-*", "seeded.json"))
	if len(markers) != 1 {
		t.Fatalf("cache holds %v, want one seeded registry", markers)
	}
	before, _ := os.Stat(markers[0])
	w, _ := workload.New(o)
	w.AddCatalog("x")
	st := w.Stats()
	rows := map[string]Row{}
	for _, r := range res.Rows {
		rows[r.Name] = r
	}
	first, ok := rows["catalog scale m2m over lan, first run"]
	if !ok || first.Pushed < st.BlobBytes || !strings.Contains(first.Note, "token requests") {
		t.Errorf("first run row %+v: want every blob pushed (%d bytes) and the link's counts", first, st.BlobBytes)
	}
	if r, ok := rows["catalog scale over lan: start to first blob byte sent, less the catalog layer's transfer"]; !ok || r.Wall <= 0 {
		t.Errorf("first byte row %+v", r)
	}
	if _, ok := rows["catalog scale m2m over lan / link floor (unique bytes / cap)"]; !ok {
		t.Error("no link floor row")
	}
	if r, ok := rows["catalog scale m2d over lan, first run"]; !ok || r.Pushed < st.BlobBytes {
		t.Errorf("m2d over the link %+v: want an archive of every blob (%d bytes)", r, st.BlobBytes)
	}
	if r, ok := rows["catalog scale m2d over lan / link floor (unique bytes / cap)"]; !ok || r.Target != "≤ 1.15×" {
		t.Errorf("m2d link floor row %+v", r)
	}
	run()
	if after, _ := os.Stat(markers[0]); !after.ModTime().Equal(before.ModTime()) {
		t.Error("the second run seeded the cache again")
	}
}
