package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/imageset"
)

func TestDeleteMatcher(t *testing.T) {
	const cat = "reg/ns/index:v1"
	cfg := func(y string) *imageset.DeleteImageSetConfiguration {
		t.Helper()
		c, err := imageset.LoadDelete(strings.NewReader("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n"+y), "delete-isc.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	bundle := func(pkg, name, version string, chans ...string) Want {
		return Want{Kind: WantBundle, Catalog: cat, Package: pkg, Bundle: name, Version: version, Channels: chans}
	}
	tests := []struct {
		name  string
		cfg   string
		want  Want
		match bool
	}{
		{"whole catalog: bundle", "  operators:\n  - catalog: " + cat + "\n", bundle("a", "a.v1", "1.0.0", "stable"), true},
		{"whole catalog: catalog image", "  operators:\n  - catalog: " + cat + "\n", Want{Kind: WantCatalog, Catalog: cat}, true},
		{"package: catalog image stays", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n", Want{Kind: WantCatalog, Catalog: cat}, false},
		{"other catalog", "  operators:\n  - catalog: reg/ns/other:v1\n", bundle("a", "a.v1", "1.0.0"), false},
		{"package", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n", bundle("a", "a.v1", "1.0.0"), true},
		{"other package", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: b\n", bundle("a", "a.v1", "1.0.0"), false},
		{"package known by catalog only", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n", Want{Kind: WantBundle, Catalog: cat}, false},
		{"maxVersion in", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      maxVersion: 1.2.0\n", bundle("a", "a.v1.2", "1.2.0"), true},
		{"maxVersion out", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      maxVersion: 1.2.0\n", bundle("a", "a.v1.3", "1.3.0"), false},
		{"minVersion out", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      minVersion: 1.2.0\n", bundle("a", "a.v1.1", "1.1.0"), false},
		{"channel", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      channels:\n      - name: fast\n", bundle("a", "a.v1", "1.0.0", "fast", "stable"), true},
		{"other channel", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      channels:\n      - name: fast\n", bundle("a", "a.v1", "1.0.0", "stable"), false},
		{"channel range out", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      channels:\n      - name: fast\n        maxVersion: 0.9.0\n", bundle("a", "a.v1", "1.0.0", "fast"), false},
		{"bundle by name", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      bundles:\n      - name: a.v1\n", bundle("a", "a.v1", "1.0.0"), true},
		{"other bundle by name", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      bundles:\n      - name: a.v2\n", bundle("a", "a.v1", "1.0.0"), false},
		{"additional image", "  additionalImages:\n  - name: docker://reg/tools/debug:1.0\n", Want{Kind: WantAdditional, Image: "reg/tools/debug:1.0"}, true},
		{"other additional image", "  additionalImages:\n  - name: reg/tools/debug:2.0\n", Want{Kind: WantAdditional, Image: "reg/tools/debug:1.0"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (deleteMatcher{cfg: cfg(tc.cfg)}).match(tc.want); got != tc.match {
				t.Errorf("match(%+v) = %v, want %v", tc.want, got, tc.match)
			}
		})
	}
}

func samplePlan() *DeletePlan {
	return &DeletePlan{
		APIVersion: DeletePlanAPIVersion, Kind: DeletePlanKind, Destination: "127.0.0.1:5000/mirror",
		Generated: time.Date(2026, 11, 24, 19, 0, 0, 0, time.UTC), Reason: "stale", HistoryRun: 3,
		Manifests: []PlannedManifest{{Repository: "127.0.0.1:5000/mirror/a/b", Digest: digest.Digest("sha256:" + strings.Repeat("a", 64)), Tags: []string{"v1"}, Why: []string{"stale"}}},
	}
}

func TestDeletePlanRoundTripAndChecks(t *testing.T) {
	wd := filepath.Join(t.TempDir(), "working-dir")
	p := samplePlan()
	path, err := writeDeletePlan(wd, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readPlan(bytes.NewReader(b), path)
	if err != nil {
		t.Fatal(err)
	}
	if got.id() != p.PlanID || got.Manifests[0].line == 0 {
		t.Fatalf("round trip: id %s, want %s; line %d", got.id(), p.PlanID, got.Manifests[0].line)
	}
	if err := checkPlan(got, path, wd, p.Destination); err != nil {
		t.Fatalf("unedited plan refused: %v", err)
	}
	tests := []struct {
		name, dest, want string
		edit             func(*DeletePlan)
	}{
		{"other destination", "quay.io/ns", "not quay.io/ns", func(*DeletePlan) {}},
		{"edited tags", "", "tags of", func(p *DeletePlan) { p.Manifests[0].Tags = []string{"v1", "latest"} }},
		{"unknown plan", "", "was not generated in the workspace", func(p *DeletePlan) { p.PlanID = "sha256:" + strings.Repeat("b", 64) }},
		{"bad plan id", "", "not a plan ID", func(p *DeletePlan) { p.PlanID = "sha256:../../x" }},
		{"unknown digest", "", "was never planned", func(p *DeletePlan) { p.Manifests[0].Digest = digest.Digest("sha256:" + strings.Repeat("c", 64)) }},
		{"foreign repository", "", "foreign registry", func(p *DeletePlan) { p.Manifests[0].Repository = "quay.io/x/y" }},
		{"fewer manifests", "", "", func(p *DeletePlan) { p.Manifests = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := *got
			e.Manifests = append([]PlannedManifest(nil), got.Manifests...)
			tc.edit(&e)
			dest := tc.dest
			if dest == "" {
				dest = p.Destination
			}
			err := checkPlan(&e, path, wd, dest)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadPlanBadInput(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "is empty"},
		{"not yaml", "{[", "plan.yaml"},
		{"unknown field", "apiVersion: airlock.io/v1alpha1\nkind: DeletePlan\nforce: true\n", "line 3: field force not found"},
		{"other kind", "apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\n", "is not a delete plan"},
		{"wrong type", "apiVersion: airlock.io/v1alpha1\nkind: DeletePlan\nmanifests: 3\n", "line 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readPlan(strings.NewReader(tc.in), "plan.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzReadPlan(f *testing.F) {
	b, _ := marshalPlan(samplePlan())
	f.Add(b)
	f.Add([]byte("apiVersion: airlock.io/v1alpha1\nkind: DeletePlan\nmanifests:\n- repository: a/b\n  digest: x\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := readPlan(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			return
		}
		if p.Kind != DeletePlanKind {
			t.Fatalf("accepted kind %q", p.Kind)
		}
		_ = checkPlan(p, "fuzz.yaml", t.TempDir(), "reg/ns")
	})
}

// Concurrent runs never overwrite each other's history record.
func TestAppendHistoryConcurrent(t *testing.T) {
	wd := t.TempDir()
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := appendHistory(wd, HistoryRun{Kind: RunMirror, Destination: "reg/ns"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	h, err := readHistory(wd)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != n {
		t.Fatalf("%d runs recorded, want %d", len(h.Runs), n)
	}
	for i, r := range h.Runs {
		if r.Seq != i+1 {
			t.Errorf("run %d has seq %d", i, r.Seq)
		}
	}
}
