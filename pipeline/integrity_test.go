package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
)

// integrityRuns is how many runs each case of TestManifestIntegrity gets: 10 (the
// full measure, docs/copy.md), 2 with -short; AIRLOCK_INTEGRITY_RUNS overrides.
func integrityRuns(t *testing.T) int { return runsFromEnv(t, "AIRLOCK_INTEGRITY_RUNS", 10, 2) }

// TestManifestIntegrity mirrors a catalog (two packages of the e2e catalog, one
// image in three multi-arch, the catalog an index of two) through a proxy that alters 10% and
// 50% of the manifest uploads to the destination (a flipped byte, or JSON
// re-indented: valid, same meaning, another digest), then scans the
// destination registry's storage on disk, not its API: every manifest revision
// must be a source digest or the rebuilt catalog's, and every tag must point at
// the digest the plan gives it. At 10% every run must exit 0; at 50% images may
// fail, but nothing altered may stay. Each case must have injected faults.
func TestManifestIntegrity(t *testing.T) {
	t.Parallel()
	runs := integrityRuns(t)
	src := registrytest.Start(t)
	seeded, err := seed.Seed(context.Background(), seed.Options{
		Registry: src.Host(), CatalogDir: e2eCatalog, CatalogRepo: "integrity/index",
		CatalogTag: "v1", MultiArchEvery: 3, Insecure: true, WorkDir: t.TempDir(),
		CatalogPlatforms: []string{"linux/amd64", "linux/arm64"}, // the rebuilt catalog is an index
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: "+seeded.Catalog+"\n    packages:\n    - name: bar\n    - name: baz\n")
	var table syncTable
	t.Cleanup(func() {
		t.Logf("manifest integrity (%d runs per row, mirror-to-mirror of packages bar and baz of the e2e catalog):\n"+
			"| fault | rate | runs | exit 0 | manifest uploads | faults injected | images failed | stray manifests | tags on altered manifests | time |\n"+
			"|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n%s", runs, table.String())
	})
	for _, kind := range []registrytest.Fault{registrytest.FlipByte, registrytest.MangleJSON} {
		for _, rate := range []float64{0.10, 0.50} {
			t.Run(fmt.Sprintf("%s/%.0f%%", kind, rate*100), func(t *testing.T) {
				t.Parallel() // each case its own destination and proxy; the source is only read
				var st integrityStats
				for i := 0; i < runs; i++ {
					integrityRun(t, src, cfg, kind, rate, uint64(i)+uint64(kind)*1000+uint64(rate*100), &st)
				}
				if st.faults == 0 {
					t.Fatalf("%d runs and no fault injected: the suite tested nothing", runs)
				}
				table.add(fmt.Sprintf("| %s | %.0f%% | %d | %d | %d | %d | %d | %d | %d | %.1f s |",
					kind, rate*100, runs, st.exit0, st.uploads, st.faults, st.failedImages, st.strays, st.badTags, st.elapsed.Seconds()))
			})
		}
	}
}

type integrityStats struct {
	exit0, uploads, faults, failedImages, strays, badTags int
	elapsed                                               time.Duration
}

func integrityRun(t *testing.T, src *registrytest.Registry, cfg string, kind registrytest.Fault, rate float64, seedN uint64, st *integrityStats) {
	t.Helper()
	dst := registrytest.Start(t, registrytest.WithFilesystem())
	proxy := registrytest.NewFaultProxy(t, dst.Host(), registrytest.FaultPlan{
		Match: registrytest.ManifestUploads, Rate: rate, Kinds: []registrytest.Fault{kind}, Seed: seedN,
	})
	o := faultOpts(cfg)
	o.Destination.Location = location.Docker(proxy.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	start := time.Now()
	res, err := pipeline.Mirror(context.Background(), o)
	st.elapsed += time.Since(start)
	if res == nil || res.Plan == nil {
		t.Fatalf("run %d: no result: %v", seedN, err)
	}
	if err == nil && res.Failed == 0 {
		st.exit0++
	} else if rate <= 0.10 {
		t.Fatalf("run %d with %s on %.0f%% of manifest uploads: %v%s", seedN, kind, rate*100, err, failures(res))
	}
	st.failedImages += res.Failed
	st.faults += total(proxy.Applied())
	st.uploads += int(dst.Counts().ManifestPUT)

	// What may be stored: the source manifests (children of indexes included)
	// and the rebuilt catalog; which digest each tag must name.
	allowed := map[string]bool{}
	tags := map[string]string{} // "repo:tag" (repository path in the registry) → digest
	destPath := func(repo string) string { return strings.TrimPrefix(repo, proxy.Host()+"/") }
	for _, im := range res.Plan.Images {
		if dir, ok := strings.CutPrefix(im.SourceRepo, mirror.LayoutRepoPrefix); ok { // the rebuilt catalog
			walkLayout(t, dir, im.Digest.String(), allowed)
		} else {
			walkManifests(t, im.SourceRepo+"@"+im.Digest.String(), allowed)
		}
		for _, tag := range im.Tags {
			tags[destPath(im.DestRepo)+":"+tag] = im.Digest.String()
		}
	}
	for _, c := range res.Catalogs {
		tags[destPath(c.DestRepo)+":"+c.Tag] = c.Digest.String()
	}
	strays, bad := scanStorage(t, dst.Root(), allowed, tags)
	st.strays += strays
	st.badTags += bad
}

// walkLayout adds manifest dg of the OCI layout in dir (the rebuilt catalog,
// which a run at 50% may have failed to push) and its children to seen.
func walkLayout(t *testing.T, dir, dg string, seen map[string]bool) {
	t.Helper()
	seen[dg] = true
	b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(dg, "sha256:")))
	if err != nil {
		t.Fatalf("rebuilt catalog %s@%s: %v", dir, dg, err)
	}
	var m struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("rebuilt catalog %s@%s: %v", dir, dg, err)
	}
	for _, c := range m.Manifests {
		walkLayout(t, dir, c.Digest, seen)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// walkManifests adds ref's manifest digest and its children's (an index) to
// seen, read with go-containerregistry (which checks each digest).
func walkManifests(t *testing.T, ref string, seen map[string]bool) {
	t.Helper()
	r := mustRef(t, ref)
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	seen[desc.Digest.String()] = true
	if !desc.MediaType.IsIndex() {
		return
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	for _, m := range im.Manifests {
		walkManifests(t, r.Context().Name()+"@"+m.Digest.String(), seen)
	}
}

// scanStorage reads a Distribution storage root: every repository's manifest
// revisions (_manifests/revisions/sha256/<hex>/link) must be allowed, every
// tag (_manifests/tags/<tag>/current/link) must be one of tags and name its
// digest. It reports the stray revisions and the bad tags.
func scanStorage(t *testing.T, root string, allowed map[string]bool, tags map[string]string) (strays, badTags int) {
	t.Helper()
	repos := filepath.Join(root, "docker", "registry", "v2", "repositories")
	found := 0
	err := filepath.WalkDir(repos, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "link" {
			return err
		}
		rel, _ := filepath.Rel(repos, p)
		repo, rest, ok := strings.Cut(filepath.ToSlash(rel), "/_manifests/")
		if !ok {
			return nil // a layer link
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dg := strings.TrimSpace(string(b))
		parts := strings.Split(rest, "/")
		switch {
		case len(parts) == 4 && parts[0] == "revisions":
			found++
			if !allowed[dg] {
				strays++
				t.Errorf("stray manifest in the registry storage: %s@%s is neither a source manifest nor the rebuilt catalog", repo, dg)
			}
		case len(parts) == 4 && parts[0] == "tags" && parts[2] == "current":
			want, ok := tags[repo+":"+parts[1]]
			if !ok || want != dg || !allowed[dg] {
				badTags++
				t.Errorf("tag %s:%s names %s, want %q", repo, parts[1], dg, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", repos, err)
	}
	if found == 0 {
		t.Fatalf("no manifest revision found under %s: the scan looks in the wrong place", repos)
	}
	return strays, badTags
}
