package deletion_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestDatedConfigFiles: a site mirrors with a new dated configuration file every
// month (isc-2026-10.yaml, then isc-2026-11.yaml). Each file's last run is a
// selection, so --stale plans nothing until the October one is retired
// (airlock history retire) or only the latest selection is counted
// (--selections latest); either way the plan is exactly what November does not
// want, and the plan and its output say which selections were counted.
func TestDatedConfigFiles(t *testing.T) {
	ctx := context.Background()
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	ws := t.TempDir()
	cfgDir := t.TempDir()
	dest := dst.Host() + "/mirror"
	var runs []*pipeline.Result
	var cfgs []string
	for i, m := range months[:2] {
		red, err := seed.Seed(ctx, seed.Options{Registry: src.Host(), CatalogDir: monthlyCatalog(i, "redhat"), CatalogRepo: "acme/redhat-index", CatalogTag: "v4.18",
			Insecure: true, WorkDir: t.TempDir(), Images: []string{m.debug}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(cfgDir, fmt.Sprintf("isc-2026-%d.yaml", 10+i))
		writeFile(t, cfg, fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: %s\n    packages:\n    - name: alpha\n  additionalImages:\n  - name: %s\n", red.Catalog, red.Extra[m.debug]))
		o := mirrorOptions(cfg)
		o.Workspace, o.Destination.Location = location.File(ws), location.Docker(dest)
		res, err := pipeline.Mirror(ctx, o)
		if err != nil {
			t.Fatalf("month %d: %v", i+1, err)
		}
		runs, cfgs = append(runs, res), append(cfgs, cfg)
	}
	// What October mirrored and November does not want.
	nov := map[string]bool{}
	for _, im := range runs[1].Plan.Images {
		nov[im.DestRepo+"@"+im.Digest.String()] = true
	}
	var want []string
	for _, im := range runs[0].Plan.Images {
		if k := im.DestRepo + "@" + im.Digest.String(); !nov[k] && !slices.Contains(want, k) {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	if len(want) == 0 {
		t.Fatal("test set-up: November wants everything October mirrored")
	}

	gen := func(selections string) (*deletion.Result, string) {
		t.Helper()
		res, err := pipeline.Delete(ctx, deletion.Options{Generate: true, Stale: true, Selections: selections, Workspace: location.File(ws), Destination: location.Docker(dest)})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		res.WriteText(&b, false)
		return res, b.String()
	}
	planned := func(res *deletion.Result) []string {
		var out []string
		for _, m := range res.Plan.Manifests {
			if m.ChildOf == "" {
				out = append(out, workspace.ImageKey(m.Repository, m.Digest))
			}
		}
		slices.Sort(out)
		return out
	}
	oct, novRun := "run 1 ("+cfgs[0], "run 2 ("+cfgs[1]

	// Both files count: nothing is stale, and the output says why.
	res, text := gen("")
	if len(res.Plan.Manifests) != 0 || len(res.Plan.Selections) != 2 || !strings.Contains(text, "selections counted (their images are kept): "+oct) || !strings.Contains(text, novRun) {
		t.Errorf("both selections counted: %d planned, selections %v\n%s", len(res.Plan.Manifests), res.Plan.Selections, text)
	}

	// --selections latest: only November counts.
	res, text = gen(workspace.SelectionsLatest)
	if got := planned(res); !slices.Equal(got, want) {
		t.Errorf("--selections latest plans\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(text, "not counted: "+oct) || !strings.Contains(text, "older than the latest selection") {
		t.Errorf("--selections latest output does not name October as not counted:\n%s", text)
	}

	// Retiring October (by its file name): the default plan is the same.
	retired, err := workspace.Retire(workspace.At(ws), "isc-2026-10.yaml", "")
	if err != nil || len(retired) != 1 || retired[0].ConfigPath != cfgs[0] || retired[0].Destination != dest {
		t.Fatalf("retire: %+v, %v", retired, err)
	}
	res, text = gen("")
	t.Logf("after retiring October:\n%s", text)
	if got := planned(res); !slices.Equal(got, want) {
		t.Errorf("after retiring October the plan is\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Plan.Selections) != 1 || !strings.Contains(text, "not counted: "+oct) || !strings.Contains(text, fmt.Sprintf("retired by run %d", retired[0].Seq)) {
		t.Errorf("after retiring October: selections %v\n%s", res.Plan.Selections, text)
	}
	if _, err := workspace.Retire(workspace.At(ws), cfgs[0], ""); !errors.Is(err, workspace.ErrNoSelection) {
		t.Errorf("retiring October twice: %v", err)
	}
	h, err := pipeline.ReadHistory(location.File(ws))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := h.WriteText(&b); err != nil || !strings.Contains(b.String(), "retired the selection of "+cfgs[0]) {
		t.Errorf("history text: %v\n%s", err, b.String())
	}
}
