package deletion_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/registryserver"
	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// The monthly routine of a disconnected site, against a real Distribution
// registry with deletes enabled: three monthly mirror runs of two moving catalogs
// that share related images, then the stale plan, its execution, and the garbage
// collection, each checked with a plain HTTP client rather than airlock's.

type imageAt struct {
	repo   string
	digest digest.Digest
	source string
	tags   []string
}

// mirrorOptions are the options of the mirror runs that fill the registry (as
// pipeline's own tests run them).
func mirrorOptions(cfgPath string) pipeline.Options {
	return pipeline.Options{ConfigPath: cfgPath, Network: pipeline.NetworkOptions{ParallelImages: 4, ParallelLayers: 4, RetryTimes: 5}}
}

func TestMonthlyRoutineStaleDeleteAndGC(t *testing.T) {
	if testing.Short() {
		t.Skip("three mirror runs against real registries")
	}
	ctx := context.Background()
	src := registrytest.Start(t)
	dst := registrytest.Start(t, registrytest.WithFilesystem())
	raw := rawRegistry{t: t, base: dst.URL()}
	ws := t.TempDir()
	cfgDir := t.TempDir()
	cfgPath := filepath.Join(cfgDir, "imageset.yaml")
	dest := dst.Host() + "/mirror"

	var runs []*pipeline.Result
	for i, m := range months {
		red, err := seed.Seed(ctx, seed.Options{Registry: src.Host(), CatalogDir: monthlyCatalog(i, "redhat"), CatalogRepo: "acme/redhat-index", CatalogTag: "v4.18",
			MultiArchEvery: 2, Insecure: true, WorkDir: t.TempDir(), Images: []string{m.debug}})
		if err != nil {
			t.Fatal(err)
		}
		com, err := seed.Seed(ctx, seed.Options{Registry: src.Host(), CatalogDir: monthlyCatalog(i, "community"), CatalogRepo: "acme/community-index", CatalogTag: "v4.18",
			MultiArchEvery: 2, Insecure: true, WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, cfgPath, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
    packages:
    - name: alpha
  - catalog: %s
    packages:
    - name: beta
  additionalImages:
  - name: %s
`, red.Catalog, com.Catalog, red.Extra[m.debug]))
		o := mirrorOptions(cfgPath)
		o.Workspace, o.Destination.Location = location.File(ws), location.Docker(dest)
		res, err := pipeline.Mirror(ctx, o)
		if err != nil {
			t.Fatalf("month %d: %v", i+1, err)
		}
		runs = append(runs, res)
	}

	// The history: three runs, each image with why it is there.
	h, err := pipeline.ReadHistory(location.File(ws))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 3 {
		t.Fatalf("history has %d runs, want 3", len(h.Runs))
	}
	for _, im := range h.Runs[2].Images {
		if len(im.WantedBy) == 0 {
			t.Errorf("run 3: %s has no reason", im.Source)
		}
		if strings.Contains(im.Source, "alpha-operator:1.3.0") && (im.WantedBy[0].Bundle != "alpha.v1.3.0" || im.WantedBy[0].Version != "1.3.0" || im.WantedBy[0].Package != "alpha") {
			t.Errorf("alpha-operator:1.3.0 wanted by %+v", im.WantedBy)
		}
	}
	var text strings.Builder
	if err := h.WriteText(&text); err != nil || !strings.Contains(text.String(), "run 3") {
		t.Errorf("history text: %v\n%s", err, text.String())
	}

	// What the months mirrored, from the runs' plans: everything before the
	// last month and not in it is stale.
	all := map[string]imageAt{}
	latest := map[string]bool{}
	for i, res := range runs {
		for _, im := range res.Plan.Images {
			k := im.DestRepo + "@" + im.Digest.String()
			all[k] = imageAt{repo: im.DestRepo, digest: im.Digest, source: im.Source, tags: im.Tags}
			if i == len(runs)-1 {
				latest[k] = true
			}
		}
	}
	stale := map[string]bool{}
	for k := range all {
		if !latest[k] {
			stale[k] = true
		}
	}
	sourceStale := func(suffix string) bool {
		for k := range stale {
			if strings.HasSuffix(all[k].source, suffix) {
				return true
			}
		}
		return false
	}
	for _, s := range []string{"/shared/kube-rbac-proxy:v2", "/acme/alpha-bundle:v1.1.0", "/acme/beta-operator:2.0.0", "/tools/debug:1.0"} {
		if !sourceStale(s) {
			t.Fatalf("test set-up: %s should have fallen out", s)
		}
	}
	if sourceStale("/shared/kube-rbac-proxy:v1") {
		t.Fatal("test set-up: proxy v1 is still used by beta")
	}

	// Before anything is deleted, the registry has no garbage but the mount
	// probe's blob ("{}", two bytes, committed once by the first run: see
	// mirror/registry's honoursMountsOf), and the blobs of every manifest
	// airlock put there are known.
	gc0, err := registryserver.GarbageCollect(ctx, dst.Root(), true)
	if err != nil {
		t.Fatal(err)
	}
	if gc0.BlobsDeleted > 1 || gc0.BytesFreed != int64(gc0.BlobsDeleted)*2 {
		t.Fatalf("gc before any delete would free %d blobs (%d bytes), want at most the mount probe's", gc0.BlobsDeleted, gc0.BytesFreed)
	}

	// A DeleteImageSetConfiguration for alpha up to 1.2.0: proxy v1 is named (by
	// alpha 1.1.0) but beta still wants it, so the plan keeps it.
	delCfg := filepath.Join(cfgDir, "delete-isc.yaml")
	writeFile(t, delCfg, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: DeleteImageSetConfiguration
delete:
  operators:
  - catalog: %s
    packages:
    - name: alpha
      maxVersion: 1.2.0
`, runs[0].Catalogs[0].Catalog))
	dres, err := pipeline.Delete(ctx, deletion.Options{Generate: true, ConfigPath: delCfg, Workspace: location.File(ws), Destination: location.Docker(dest)})
	if err != nil {
		t.Fatal(err)
	}
	keptProxy := false
	for _, k := range dres.Plan.Kept {
		if strings.HasSuffix(k.Source, "/shared/kube-rbac-proxy:v1") {
			keptProxy = strings.Contains(strings.Join(k.Why, " "), "beta")
		}
	}
	if !keptProxy {
		t.Errorf("the delete configuration's plan does not keep proxy v1 for beta: kept %+v", dres.Plan.Kept)
	}
	for _, m := range dres.Plan.Manifests {
		if strings.Contains(m.Source, "1.3.0") || strings.Contains(m.Source, "beta") || strings.Contains(m.Source, "kube-rbac-proxy:v1") {
			t.Errorf("the delete configuration's plan deletes %s", m.Source)
		}
	}

	// The stale plan: exactly what no selection wants (indexes with their
	// platform images), never what the last month uses.
	gen := func() *deletion.Result {
		t.Helper()
		res, err := pipeline.Delete(ctx, deletion.Options{Generate: true, Stale: true, Workspace: location.File(ws), Destination: location.Docker(dest)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plan := gen()
	planned := map[string]bool{}
	for _, m := range plan.Plan.Manifests {
		k := m.Repository + "@" + m.Digest.String()
		if m.ChildOf == "" {
			planned[k] = true
		}
		if latest[k] {
			t.Errorf("the stale plan deletes %s (%s), which the last month mirrored", k, m.Source)
		}
	}
	for k := range stale {
		if !planned[k] {
			t.Errorf("the stale plan misses %s (%s)", k, all[k].source)
		}
	}
	for k := range planned {
		if !stale[k] {
			t.Errorf("the stale plan deletes %s, not stale", k)
		}
	}
	keptProxy = false
	for _, k := range plan.Plan.Kept {
		if strings.HasSuffix(k.Source, "/shared/kube-rbac-proxy:v1") {
			keptProxy = true
		}
	}
	if !keptProxy {
		t.Errorf("the stale plan does not say why proxy v1 stays: %+v", plan.Plan.Kept)
	}

	// Edited plans are refused with a clear error, before anything is deleted.
	body, err := os.ReadFile(plan.PlanFile)
	if err != nil {
		t.Fatal(err)
	}
	edits := []struct {
		name, want string
		edit       func(string) string
	}{
		{"foreign-registry", "foreign registry", func(s string) string {
			return strings.Replace(s, "repository: "+dest+"/", "repository: quay.io/evil/", 1)
		}},
		{"foreign-destination", "destination was edited", func(s string) string {
			return strings.Replace(s, "destination: "+dest, "destination: quay.io/evil", 1)
		}},
		{"unknown-digest", "was never planned", func(s string) string {
			var keep imageAt
			for k := range latest {
				keep = all[k]
				break
			}
			return strings.Replace(s, "manifests:\n", fmt.Sprintf("manifests:\n  - repository: %s\n    digest: %s\n    why: [me]\n", keep.repo, keep.digest), 1)
		}},
		{"unknown-field", "not found", func(s string) string { return strings.Replace(s, "manifests:\n", "force: true\nmanifests:\n", 1) }},
	}
	for _, e := range edits {
		f := filepath.Join(filepath.Dir(plan.PlanFile), e.name+".yaml")
		writeFile(t, f, e.edit(string(body)))
		_, err := pipeline.Delete(ctx, deletion.Options{PlanFile: f, Destination: location.Docker(dest)})
		if err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%s: err = %v, want %q", e.name, err, e.want)
		}
	}
	if _, err := pipeline.Delete(ctx, deletion.Options{PlanFile: plan.PlanFile, Destination: location.Docker(src.Host() + "/mirror")}); !errors.Is(err, workspace.ErrPlanRefused) {
		t.Errorf("plan run against another registry: %v", err)
	}

	// A registry changed since the plan: a new tag on a planned manifest.
	var victim workspace.PlannedManifest
	for _, m := range plan.Plan.Manifests {
		if m.ChildOf == "" {
			victim = m
			break
		}
	}
	mraw, _ := raw.manifest(victim.Repository[len(dst.Host())+1:], victim.Digest.String())
	var mt rawManifest
	_ = json.Unmarshal(mraw, &mt)
	repoPath := func(repo string) string { return strings.TrimPrefix(repo, dst.Host()+"/") }
	if code := raw.send(http.MethodPut, repoPath(victim.Repository), "pinned-by-someone", mraw, mt.MediaType); code != http.StatusCreated {
		t.Fatalf("tag a planned manifest: %d", code)
	}
	if _, err := pipeline.Delete(ctx, deletion.Options{PlanFile: plan.PlanFile, Destination: location.Docker(dest)}); !errors.Is(err, workspace.ErrPlanRefused) || !strings.Contains(err.Error(), "pinned-by-someone") {
		t.Fatalf("a plan against a changed registry: %v", err)
	}
	if code := raw.send(http.MethodDelete, repoPath(victim.Repository), "pinned-by-someone", nil, ""); code != http.StatusAccepted {
		t.Fatalf("untag: %d", code)
	}

	// The bytes gc must free: blobs of the deleted manifests that no remaining
	// manifest uses, computed from what the registry serves.
	deletedBlobs, keptBlobs := map[digest.Digest]int64{}, map[digest.Digest]int64{}
	for k, im := range all {
		if stale[k] {
			raw.blobs(repoPath(im.repo), im.digest, deletedBlobs)
		} else {
			raw.blobs(repoPath(im.repo), im.digest, keptBlobs)
		}
	}
	var wantFreed int64
	wantBlobs := 0
	for d, n := range deletedBlobs {
		if _, ok := keptBlobs[d]; !ok {
			wantFreed += n
			wantBlobs++
		}
	}

	// Execute the reviewed plan.
	res, err := pipeline.Delete(ctx, deletion.Options{PlanFile: plan.PlanFile, Destination: location.Docker(dest)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != len(plan.Plan.Manifests) {
		t.Errorf("deleted %d manifests, planned %d", len(res.Deleted), len(plan.Plan.Manifests))
	}
	if _, err := pipeline.Delete(ctx, deletion.Options{PlanFile: plan.PlanFile, Destination: location.Docker(dest)}); !errors.Is(err, workspace.ErrPlanRefused) {
		t.Errorf("a plan executed twice: %v", err)
	}

	// The independent client: every stale manifest is gone, with its tags;
	// every manifest of the last month is served, by digest and by tag.
	check := func(stage string) {
		t.Helper()
		tagsOf := map[string]map[string]bool{}
		for _, repo := range raw.repos() {
			tagsOf[repo] = map[string]bool{}
			for _, tag := range raw.tags(repo) {
				tagsOf[repo][tag] = true
			}
		}
		for k, im := range all {
			code := raw.head(repoPath(im.repo), im.digest.String())
			switch {
			case stale[k] && code != http.StatusNotFound:
				t.Errorf("%s: stale %s (%s) still served (%d)", stage, k, im.source, code)
			case !stale[k] && code != http.StatusOK:
				t.Errorf("%s: %s (%s) is no longer served (%d)", stage, k, im.source, code)
			}
			for _, tag := range im.tags {
				if latest[k] && !tagsOf[repoPath(im.repo)][tag] {
					t.Errorf("%s: tag %s:%s of the last month is missing", stage, im.repo, tag)
				}
			}
		}
		for _, m := range plan.Plan.Manifests {
			for _, tag := range m.Tags {
				if tagsOf[repoPath(m.Repository)][tag] {
					t.Errorf("%s: deleted tag %s:%s still listed", stage, m.Repository, tag)
				}
			}
		}
		for k, im := range all {
			if stale[k] {
				continue
			}
			served := map[digest.Digest]int64{}
			if !raw.blobs(repoPath(im.repo), im.digest, served) {
				t.Errorf("%s: %s not served", stage, k)
			}
			for d := range served {
				if raw.headBlob(repoPath(im.repo), d) != http.StatusOK && raw.head(repoPath(im.repo), d.String()) != http.StatusOK {
					t.Errorf("%s: %s of %s not served", stage, d, im.source)
				}
			}
		}
	}
	check("after delete")

	// The history knows, and a new stale plan is empty.
	if again := gen(); len(again.Plan.Manifests) != 0 {
		t.Errorf("stale plan after the delete: %d manifests", len(again.Plan.Manifests))
	}

	// Cluster resources name nothing deleted.
	for _, f := range res.ClusterResources {
		b, _ := os.ReadFile(f)
		for k := range stale {
			if strings.Contains(string(b), all[k].digest.String()) {
				t.Errorf("%s still names %s", f, k)
			}
		}
	}

	// gc: a dry run says what the real run frees, and that is the expected bytes.
	dry, err := registryserver.GarbageCollect(ctx, dst.Root(), true)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := registryserver.GarbageCollect(ctx, dst.Root(), false)
	if err != nil {
		t.Fatal(err)
	}
	if dry.BytesFreed != gc.BytesFreed || dry.BlobsDeleted != gc.BlobsDeleted {
		t.Errorf("dry run would free %d bytes in %d blobs, the run freed %d in %d", dry.BytesFreed, dry.BlobsDeleted, gc.BytesFreed, gc.BlobsDeleted)
	}
	// And the mount probe's blob, garbage from the start.
	if gc.BytesFreed != wantFreed+gc0.BytesFreed || gc.BlobsDeleted != wantBlobs+gc0.BlobsDeleted {
		t.Errorf("gc freed %d bytes in %d blobs, want %d in %d and the probe's %d in %d", gc.BytesFreed, gc.BlobsDeleted, wantFreed, wantBlobs, gc0.BytesFreed, gc0.BlobsDeleted)
	}
	if gc.BytesFreed == 0 {
		t.Error("gc freed nothing")
	}
	after, err := registryserver.GarbageCollect(ctx, dst.Root(), true)
	if err != nil {
		t.Fatal(err)
	}
	if after.BlobsDeleted != 0 || after.BytesBefore != gc.BytesBefore-gc.BytesFreed {
		t.Errorf("after gc: %+v (before %+v)", after, gc)
	}
	check("after gc")

	// A DeleteImageSetConfiguration removing an image the last month still
	// selected: the cluster resources no longer name it.
	var debug imageAt
	for k := range latest {
		if strings.Contains(all[k].source, "/tools/debug:") {
			debug = all[k]
		}
	}
	writeFile(t, delCfg, fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: DeleteImageSetConfiguration
delete:
  additionalImages:
  - name: %s
`, debug.source))
	dplan, err := pipeline.Delete(ctx, deletion.Options{Generate: true, ConfigPath: delCfg, Workspace: location.File(ws), Destination: location.Docker(dest)})
	if err != nil {
		t.Fatal(err)
	}
	if len(dplan.Plan.Manifests) == 0 || dplan.Plan.Manifests[0].Digest != debug.digest {
		t.Fatalf("plan to delete %s: %+v", debug.source, dplan.Plan.Manifests)
	}
	named := func() bool {
		t.Helper()
		for _, f := range []string{"itms-generic-0.yaml", "idms-generic-0.yaml"} {
			if b, err := os.ReadFile(filepath.Join(ws, "working-dir", "cluster-resources", f)); err == nil && strings.Contains(string(b), "/tools") {
				return true
			}
		}
		return false
	}
	if !named() {
		t.Fatal("test set-up: the cluster resources do not name the additional image")
	}
	dres2, err := pipeline.Delete(ctx, deletion.Options{PlanFile: dplan.PlanFile, Destination: location.Docker(dest)})
	if err != nil {
		t.Fatal(err)
	}
	if len(dres2.ClusterResources) == 0 || named() {
		t.Errorf("cluster resources after deleting %s still name it (%v)", debug.source, dres2.ClusterResources)
	}
	if code := raw.head(repoPath(debug.repo), debug.digest.String()); code != http.StatusNotFound {
		t.Errorf("%s still served: %d", debug.source, code)
	}
	var keys []string
	for k := range stale {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("stale manifests %d (plan %d with platform images), kept %d, gc freed %d bytes in %d blobs of %d", len(stale), len(plan.Plan.Manifests), len(plan.Plan.Kept), gc.BytesFreed, gc.BlobsDeleted, gc.BlobsBefore)
}
