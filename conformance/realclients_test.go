package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/prune"
)

// This file runs `airlock mirror` (the pipeline, as a library) on real catalogs
// seeded into an embedded registry, then hands what it produced to the programs
// that consume it in a cluster: the catalog image to operator-registry's server,
// queried over gRPC as OLM does (catalogserve_test.go); the images the served
// bundles name to a resolver that applies the generated mirror sets as the cluster
// does (mirrorsets_test.go); every cluster resource to the API server's validation
// with the real CRDs (crdschema_test.go).

// seededCatalog is one catalog seeded at the source registry.
type seededCatalog struct {
	name string
	root string   // catalog root under the real catalogs
	pkgs []string // when set, only these package folders of root are seeded
	res  *seed.Result
	// platforms makes the catalog image a multi-arch index.
	platforms []string
	// large catalogs are left out with -short (seeding them takes most of the
	// test's time).
	large bool
}

// scenario is one `airlock mirror` run: a catalog and the packages section of its
// operators entry.
type scenario struct {
	name     string
	catalog  string // seededCatalog.name
	packages string // YAML lines under "packages:", empty for the whole catalog
	full     bool   // full: true on the operators entry
	// wantPackages checks that the scenario exercises what it is named after (nil:
	// no check).
	wantPackages []string
}

var realCatalogs = []*seededCatalog{
	{name: "descheduler", root: "kube-descheduler-v4.20/v4.20/catalog"},
	{name: "community", root: "community-operators-prod-v4.21/catalogs/v4.21",
		pkgs: []string{"cat-facts-operator", "kube-green", "rabbitmq-cluster-operator", "rabbitmq-messaging-topology-operator"}},
	{name: "community-all", root: "community-operators-prod-v4.21/catalogs/v4.21", large: true},
	{name: "e2e", root: "oc-mirror-testdata/v1/test/e2e/artifacts/configs", platforms: []string{"linux/amd64", "linux/arm64"}},
}

var scenarios = []scenario{
	// No packages: the head of every channel of every package.
	{name: "heads-only", catalog: "descheduler", wantPackages: []string{"cluster-kube-descheduler-operator"}},
	// Version ranges at channel and package level.
	{name: "ranges", catalog: "community", packages: `
    - name: rabbitmq-cluster-operator
      channels:
      - name: stable
        minVersion: 2.16.0
        maxVersion: 2.21.1
    - name: kube-green
      minVersion: 0.5.0`, wantPackages: []string{"kube-green", "rabbitmq-cluster-operator"}},
	// olm.gvk.required: the topology operator needs the cluster operator's RabbitmqCluster.
	{name: "dependencies", catalog: "community", packages: `
    - name: rabbitmq-messaging-topology-operator`, wantPackages: []string{"rabbitmq-cluster-operator", "rabbitmq-messaging-topology-operator"}},
	// Every bundle of the selected packages (full: true with packages is pruned and
	// rebuilt; a whole catalog with full: true is copied untouched).
	{name: "full", catalog: "community", full: true, packages: `
    - name: kube-green
    - name: cat-facts-operator`, wantPackages: []string{"cat-facts-operator", "kube-green"}},
	// A whole real catalog, heads only.
	{name: "community-heads", catalog: "community-all"},
	// oc-mirror's own end-to-end index: olm.package.required, multi-arch catalog.
	{name: "e2e-index", catalog: "e2e", packages: `
    - name: foo`, wantPackages: []string{"bar", "foo"}},
}

// mirrorRun is what one scenario produced.
type mirrorRun struct {
	sc          scenario
	cfgPath     string
	seeded      *seededCatalog
	res         *pipeline.Result
	explanation *prune.Explanation // airlock catalog prune --explain on the same input
	namespace   string             // destination namespace
}

// realClientsEnv is the registries and the runs, shared by the subtests.
type realClientsEnv struct {
	src, dst *registrytest.Registry
	runs     []*mirrorRun
}

func setupRealClients(t *testing.T) *realClientsEnv {
	t.Helper()
	root := fixtures.RealCatalogs()
	if root == "" {
		t.Skip("shared/fixtures/real-catalogs not found")
	}
	ctx := context.Background()
	env := &realClientsEnv{src: registrytest.Start(t), dst: registrytest.Start(t)}
	byName := map[string]*seededCatalog{}
	for _, c := range realCatalogs {
		if c.large && testing.Short() {
			continue
		}
		dir := filepath.Join(root, filepath.FromSlash(c.root))
		if len(c.pkgs) > 0 {
			dir = subsetCatalog(t, dir, c.pkgs)
		}
		res, err := seed.Seed(ctx, seed.Options{
			Registry: env.src.Host(), CatalogDir: dir, CatalogRepo: "catalogs/" + c.name + "-index",
			CatalogTag: "v1", Insecure: true, WorkDir: t.TempDir(), MultiArchEvery: 5,
			CatalogPlatforms: c.platforms, Parallel: 4,
		})
		if err != nil {
			t.Fatalf("seed %s: %v", c.name, err)
		}
		cc := *c
		cc.res = res
		byName[c.name] = &cc
	}
	for _, sc := range scenarios {
		sc := sc
		c := byName[sc.catalog]
		if c == nil {
			continue // a large catalog under -short
		}
		r := &mirrorRun{sc: sc, seeded: c, namespace: "mirror-" + sc.name}
		r.cfgPath = writeImageSet(t, c.res.Catalog, sc.packages, sc.full)
		o := pipeline.Options{
			ConfigPath: r.cfgPath, Workspace: location.File(t.TempDir()),
			Destination: pipeline.DestinationOptions{Location: location.Docker(env.dst.Host() + "/" + r.namespace)},
			Network:     pipeline.NetworkOptions{ParallelImages: 4, ParallelLayers: 4, RetryTimes: 3},
		}
		res, err := pipeline.Mirror(ctx, o)
		if err != nil {
			t.Fatalf("%s: airlock mirror: %v", sc.name, err)
		}
		r.res = res
		// What airlock says it kept: `airlock catalog prune --explain` on the catalog
		// the mirror run read, with the same configuration.
		pr, err := pipeline.PruneDir(ctx, pipeline.PruneOptions{ConfigPath: r.cfgPath, Source: c.res.CatalogDir})
		if err != nil {
			t.Fatalf("%s: prune --explain: %v", sc.name, err)
		}
		r.explanation = pr.Explanation
		var kept []string
		for _, p := range pr.Explanation.Packages {
			kept = append(kept, p.Name)
		}
		if sc.wantPackages != nil && strings.Join(kept, ",") != strings.Join(sc.wantPackages, ",") {
			t.Fatalf("%s: kept packages %v, the scenario expects %v", sc.name, kept, sc.wantPackages)
		}
		if len(res.Catalogs) != 1 || !res.Catalogs[0].Rebuilt {
			t.Fatalf("%s: expected one rebuilt catalog, got %+v", sc.name, res.Catalogs)
		}
		env.runs = append(env.runs, r)
	}
	// The cluster is disconnected: from here on only the mirror answers.
	env.src.Stop()
	return env
}

// subsetCatalog copies the named package folders of a catalog root into a new root.
func subsetCatalog(t *testing.T, root string, pkgs []string) string {
	t.Helper()
	out := t.TempDir()
	for _, p := range pkgs {
		err := filepath.WalkDir(filepath.Join(root, p), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(out, rel), 0o755)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(out, rel), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func writeImageSet(t *testing.T, catalog, packages string, full bool) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
`, catalog)
	if full {
		cfg += "    full: true\n"
	}
	if packages != "" {
		cfg += "    packages:" + packages + "\n"
	}
	p := filepath.Join(t.TempDir(), "imageset.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRealClients mirrors the scenarios, then checks each run's catalog with
// operator-registry's server, its images through its mirror sets, and its cluster
// resources against the real CRDs. The totals are logged for docs/conformance.md.
// -short leaves out the whole community catalog.
func TestRealClients(t *testing.T) {
	env := setupRealClients(t)
	var queries, images, byTag, catalogRefs, objects int
	kinds := map[string]int{}
	for _, r := range env.runs {
		t.Run(r.sc.name, func(t *testing.T) {
			cat := exportCatalog(t, r)
			var named []string
			t.Run("serve", func(t *testing.T) {
				var q int
				q, named = serveAndQuery(t, r, cat)
				queries += q
			})
			t.Run("mirror-sets", func(t *testing.T) {
				if len(named) == 0 {
					t.Fatal("the served catalog named no image")
				}
				n, tags := resolveServedImages(t, r, named)
				images, byTag = images+n, byTag+tags
				catalogRefs += checkCatalogRefs(t, r)
			})
			if r.sc.name == "full" {
				t.Run("tampered", func(t *testing.T) { checkTampering(t, r, cat) })
			}
			t.Run("crds", func(t *testing.T) {
				dir := filepath.Join(r.res.WorkingDir, "cluster-resources")
				for k, n := range checkClusterResources(t, dir) {
					kinds[k] += n
					objects += n
				}
			})
		})
	}
	var ks []string
	for k, n := range kinds {
		ks = append(ks, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(ks)
	t.Logf("%d catalogs served, %d gRPC queries answered as airlock says; %d image references resolved through the mirror sets (%d by tag, through ITMS only); %d catalog references pulled; %d cluster resources valid (%s)",
		len(env.runs), queries, images, byTag, catalogRefs, objects, strings.Join(ks, ", "))
}
