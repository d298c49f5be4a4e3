package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

// TestYAMLAgreement is the equivalence proof of airlock's YAML loading (a fast
// path for the regular shape, sigs.k8s.io/yaml for the rest) with opm's: on
// every catalog that has YAML files, and on the YAML rendering of every
// catalog (what `airlock catalog render -o yaml` writes), both loaders must
// accept or refuse alike, load the same documents, give byte-identical
// property values and blobs of other schemas (opm's bytes with encoding/json's
// HTML escapes undone, as airlock keeps them), reach the same validate
// verdict, and airlock must write the same catalog from a model with heavy
// values elided (restored from the YAML source) as from one with them kept.
func TestYAMLAgreement(t *testing.T) {
	ctx := context.Background()
	compared := 0
	for _, src := range allSources(t) {
		t.Run(src.Name, func(t *testing.T) {
			known := expectedDiffs[src.Name]
			if yaml, all := yamlFiles(t, src.Dir); yaml {
				t.Run("source", func(t *testing.T) {
					compareYAML(ctx, t, src.Dir, all, known)
					compared++
				})
			}
			t.Run("rendered", func(t *testing.T) {
				c, err := fbc.LoadDir(ctx, src.Dir, fbc.LoadOptions{ElideHeavy: true})
				if err != nil {
					t.Skipf("airlock cannot load it: %v", err)
				}
				dir := t.TempDir()
				f, err := os.Create(filepath.Join(dir, "catalog.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				err = fbc.Render(ctx, c, f, fbc.FormatYAML)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatalf("render -o yaml: %v", err)
				}
				compareYAML(ctx, t, dir, true, known)
				compared++
			})
		})
	}
	if compared < 20 {
		t.Fatalf("only %d YAML catalogs compared", compared)
	}
	t.Logf("%d YAML catalogs compared", compared)
}

// yamlFiles reports whether a file of the catalog is YAML (its first
// non-space byte is not '{', as both loaders decide), and whether all are.
func yamlFiles(t *testing.T, dir string) (some, all bool) {
	t.Helper()
	all = true
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".indexignore" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			if t[0] != '{' {
				some = true
			} else {
				all = false
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return some, all && some
}

// compareYAML compares the loaders on dir. Byte-exact values are compared
// when every file is YAML: opm re-encodes every document through a
// map[string]any (sorted keys, float64 numbers, no HTML escapes), which for
// YAML is what the YAML-to-JSON conversion already gives, but not for JSON
// files, whose bytes airlock keeps as they are. known is a documented
// difference of the validate verdicts.
func compareYAML(ctx context.Context, t *testing.T, dir string, exact bool, known *knownDiff) {
	t.Helper()
	cfg, opmErr := opmLoad(ctx, dir)
	full, ourErr := fbc.LoadDir(ctx, dir, fbc.LoadOptions{})
	if opmErr != nil && ourErr == nil && strings.Contains(opmErr.Error(), "read bundle objects") {
		t.Skipf("opm checks bundle objects at load time: %v", opmErr)
	}
	if (opmErr == nil) != (ourErr == nil) {
		t.Fatalf("loaders disagree: opm: %v; airlock: %v", opmErr, ourErr)
	}
	if opmErr != nil {
		return
	}
	if d := canonOpm(cfg).diff(canonOurs(full), 20); d != "" {
		t.Fatalf("models differ (first: opm, second: airlock):\n%s", d)
	}
	if exact {
		compareExact(t, cfg, full)
	}
	// Validate verdicts, with values elided as the CLI loads.
	light, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatalf("elided load: %v", err)
	}
	opmV, ourV := opmValidateCfg(cfg), validate.Catalog(light)
	if known != nil && (opmV == nil) == known.opmAccepts && (ourV == nil) == known.cliAccepts {
		t.Logf("known difference (%s)", known.why)
	} else if (opmV == nil) != (ourV == nil) {
		t.Fatalf("validate verdicts differ: opm: %v; airlock: %v", opmV, ourV)
	}
	// Restored values are the kept ones.
	var a, b bytes.Buffer
	if err := fbc.Render(ctx, light, &a, fbc.FormatJSON); err != nil {
		t.Fatal(err)
	}
	if err := fbc.Render(ctx, full, &b, fbc.FormatJSON); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("rendering the elided model differs from rendering the full model")
	}
}

// compareExact compares property values and blobs byte for byte.
func compareExact(t *testing.T, cfg *declcfg.DeclarativeConfig, c *fbc.Catalog) {
	t.Helper()
	want, got := exactValues(cfg), exactOurs(c)
	if len(want) != len(got) {
		t.Fatalf("opm has %d values, airlock %d", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			j := 0
			for j < len(want[i]) && j < len(got[i]) && want[i][j] == got[i][j] {
				j++
			}
			from := max(0, j-80)
			t.Fatalf("value %d differs at byte %d:\nopm:     %s\nairlock: %s", i, j, trunc(want[i][from:]), trunc(got[i][from:]))
		}
	}
}

// exactValues lists opm's property values and blobs, in document order per kind.
func exactValues(cfg *declcfg.DeclarativeConfig) []string {
	var out []string
	for _, p := range cfg.Packages {
		for _, pr := range p.Properties {
			out = append(out, fmt.Sprintf("package %s %s %s", p.Name, pr.Type, pr.Value))
		}
	}
	for _, b := range cfg.Bundles {
		for _, pr := range b.Properties {
			out = append(out, fmt.Sprintf("bundle %s/%s %s %s", b.Package, b.Name, pr.Type, pr.Value))
		}
	}
	for _, m := range cfg.Others {
		out = append(out, fmt.Sprintf("other %s %s %s %s", m.Schema, m.Package, m.Name, bytes.TrimSpace(m.Blob)))
	}
	sort.Strings(out)
	return out
}

func exactOurs(c *fbc.Catalog) []string {
	var out []string
	for _, p := range c.Packages {
		for _, pr := range p.Properties {
			out = append(out, fmt.Sprintf("package %s %s %s", p.Name, pr.Type, pr.Value))
		}
		for _, b := range p.Bundles {
			for _, pr := range b.Properties {
				out = append(out, fmt.Sprintf("bundle %s/%s %s %s", b.Package, b.Name, pr.Type, pr.Value))
			}
		}
		for _, m := range p.Others {
			out = append(out, fmt.Sprintf("other %s %s %s %s", m.Schema, m.Package, m.Name, m.Blob))
		}
	}
	for _, m := range c.Others {
		out = append(out, fmt.Sprintf("other %s %s %s %s", m.Schema, m.Package, m.Name, m.Blob))
	}
	sort.Strings(out)
	return out
}
