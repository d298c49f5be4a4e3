package deletion_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// The moving monthly catalogs the deletion tests mirror.

// bundleSpec is one bundle of a generated catalog.
type bundleSpec struct {
	pkg, version string
	related      []string
}

// writeCatalog writes a file-based catalog with one channel "stable" per package,
// its bundles replacing each other in order.
func writeCatalog(t *testing.T, dir string, bundles []bundleSpec) string {
	t.Helper()
	byPkg := map[string][]bundleSpec{}
	var pkgs []string
	for _, b := range bundles {
		if byPkg[b.pkg] == nil {
			pkgs = append(pkgs, b.pkg)
		}
		byPkg[b.pkg] = append(byPkg[b.pkg], b)
	}
	for _, p := range pkgs {
		var docs []any
		docs = append(docs, map[string]any{"schema": "olm.package", "name": p, "defaultChannel": "stable"})
		var entries []map[string]any
		prev := ""
		for _, b := range byPkg[p] {
			name := p + ".v" + b.version
			e := map[string]any{"name": name}
			if prev != "" {
				e["replaces"] = prev
			}
			entries = append(entries, e)
			prev = name
			rel := []map[string]string{{"name": "bundle", "image": "quay.io/acme/" + p + "-bundle:v" + b.version}}
			for i, r := range b.related {
				rel = append(rel, map[string]string{"name": fmt.Sprintf("r%d", i), "image": r})
			}
			docs = append(docs, map[string]any{
				"schema": "olm.bundle", "name": name, "package": p, "image": "quay.io/acme/" + p + "-bundle:v" + b.version,
				"properties":    []any{map[string]any{"type": "olm.package", "value": map[string]string{"packageName": p, "version": b.version}}},
				"relatedImages": rel,
			})
		}
		docs = append(docs, map[string]any{"schema": "olm.channel", "name": "stable", "package": p, "entries": entries})
		var sb strings.Builder
		for _, d := range docs {
			b, _ := json.Marshal(d)
			sb.Write(b)
			sb.WriteByte('\n')
		}
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p, "catalog.json"), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// month is what the two source catalogs hold that month, and the additional image.
type month struct {
	redhat, community []bundleSpec
	debug             string
}

const (
	proxyV1 = "quay.io/shared/kube-rbac-proxy:v1"
	proxyV2 = "quay.io/shared/kube-rbac-proxy:v2"
	proxyV3 = "quay.io/shared/kube-rbac-proxy:v3"
)

var months = []month{
	{ // alpha's head 1.1.0 uses proxy v1, which beta uses too
		redhat: []bundleSpec{
			{"alpha", "1.0.0", []string{"quay.io/acme/alpha-operator:1.0.0", proxyV1}},
			{"alpha", "1.1.0", []string{"quay.io/acme/alpha-operator:1.1.0", proxyV1}},
		},
		community: []bundleSpec{{"beta", "2.0.0", []string{"quay.io/acme/beta-operator:2.0.0", proxyV1}}},
		debug:     "registry.example.com/tools/debug:1.0",
	},
	{ // 1.0.0 leaves the catalog, 1.2.0 moves to proxy v2
		redhat: []bundleSpec{
			{"alpha", "1.1.0", []string{"quay.io/acme/alpha-operator:1.1.0", proxyV1}},
			{"alpha", "1.2.0", []string{"quay.io/acme/alpha-operator:1.2.0", proxyV2}},
		},
		community: []bundleSpec{
			{"beta", "2.0.0", []string{"quay.io/acme/beta-operator:2.0.0", proxyV1}},
			{"beta", "2.1.0", []string{"quay.io/acme/beta-operator:2.1.0", proxyV1}},
		},
		debug: "registry.example.com/tools/debug:1.0",
	},
	{ // 1.3.0 moves to proxy v3: v2 falls out, v1 stays for beta
		redhat: []bundleSpec{
			{"alpha", "1.2.0", []string{"quay.io/acme/alpha-operator:1.2.0", proxyV2}},
			{"alpha", "1.3.0", []string{"quay.io/acme/alpha-operator:1.3.0", proxyV3}},
		},
		community: []bundleSpec{
			{"beta", "2.1.0", []string{"quay.io/acme/beta-operator:2.1.0", proxyV1}},
			{"beta", "2.2.0", []string{"quay.io/acme/beta-operator:2.2.0", proxyV1}},
		},
		debug: "registry.example.com/tools/debug:2.0",
	},
}

// monthlyCatalog is the catalog of month i (0-based) in testdata/monthly.
func monthlyCatalog(i int, name string) string {
	return filepath.Join("..", "..", "testdata", "monthly", fmt.Sprintf("month-%d", i+1), name)
}

// The catalogs in testdata/monthly are the months above (go test -update
// rewrites them); the README's monthly routine uses them too.
func TestMonthlyCatalogs(t *testing.T) {
	for i, m := range months {
		for name, bundles := range map[string][]bundleSpec{"redhat": m.redhat, "community": m.community} {
			dir := filepath.Join(t.TempDir(), "configs")
			writeCatalog(t, dir, bundles)
			want := monthlyCatalog(i, name)
			if golden.Updating() {
				if err := os.RemoveAll(want); err != nil {
					t.Fatal(err)
				}
				if err := os.CopyFS(want, os.DirFS(dir)); err != nil {
					t.Fatal(err)
				}
				continue
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				got, _ := os.ReadFile(filepath.Join(dir, e.Name(), "catalog.json"))
				have, err := os.ReadFile(filepath.Join(want, e.Name(), "catalog.json"))
				if err != nil || string(got) != string(have) {
					t.Errorf("%s/%s differs from the generator (%v): go test ./pipeline/deletion -run TestMonthlyCatalogs -update", want, e.Name(), err)
				}
			}
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
