package bench

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/airlockbin"
)

// TestScaleEndToEnd runs the scale section at a tiny size: every row of a
// size is printed, the air gap's and delete's among them, and the largest
// cluster resource is a YAML or JSON object, not the README; the workload has
// four catalogs and a release; the mirror sets are counted.
func TestScaleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds airlock and runs registries")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// Without the race detector: at this workload's size (four catalogs
	// and a release of 161 images) it would multiply the CPU of every row;
	// TestRunEndToEnd runs a race-built airlock through the harness.
	bin := airlockbin.BuildWithoutRace(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var out bytes.Buffer
	res, err := Run(context.Background(), Config{RepoRoot: root, Airlock: bin, WorkDir: filepath.Join(work, "run"), Quick: true, Count: 1,
		ScaleSizes: []int{20}, CacheDir: filepath.Join(work, "cache"), CatalogPort: port, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) > 0 {
		t.Fatalf("failures: %v\n%s", res.Failures, out.String())
	}
	rows := map[string]Row{}
	for _, r := range res.Rows {
		rows[r.Name] = r
	}
	for _, name := range []string{"scale: plan (--plan-only)", "scale: m2m first run", "scale: m2m no-op re-run", "scale: m2d first run",
		"scale: d2m (from that archive, fresh registry)", "scale: delete --generate (the whole catalog, against the m2m history)"} {
		if r, ok := rows[name]; !ok || r.Wall <= 0 {
			t.Errorf("row %q: %+v", name, r)
		}
	}
	if r := rows["scale: m2d first run"]; r.Pushed <= 0 {
		t.Errorf("m2d wrote no archive: %+v", r)
	}
	if r := rows["scale: delete --generate (the whole catalog, against the m2m history)"]; !strings.Contains(r.Note, "plan ") || strings.Contains(r.Note, "plan 0 B") {
		t.Errorf("delete --generate wrote no plan: %+v", r)
	}
	keeps := rows["scale: what the workspace keeps"]
	if keeps.Met != "yes" || strings.Contains(keeps.Note, "README") || !(strings.Contains(keeps.Note, ".yaml") || strings.Contains(keeps.Note, ".json")) {
		t.Errorf("largest cluster resource: %+v", keeps)
	}
	if f := rows["scale: no-op floor (one manifest HEAD per image, minimal client)"]; f.Wall <= 0 || !strings.Contains(f.Note, "HEADs") {
		t.Errorf("no-op floor: %+v", f)
	}
	if ms := rows["scale: mirror sets (repository-scoped, --max-nested-paths)"]; ms.Met != "yes" || !strings.Contains(ms.Note, "IDMS objects") {
		t.Errorf("mirror sets: %+v", ms)
	}
	for _, r := range res.Rows {
		if strings.HasPrefix(r.Name, "scale: 2") && !strings.Contains(r.Name, "4 catalogs") || strings.HasPrefix(r.Name, "scale: 2") && !strings.Contains(r.Name, "release 4.15.1: 161 images") {
			t.Errorf("heading %q: want the four catalogs and the release", r.Name)
		}
	}
	if _, ok := rows["scale: report.html opened in headless Chromium"]; !ok {
		t.Error("no report.html row")
	}
}
