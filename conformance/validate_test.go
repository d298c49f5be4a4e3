package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// expectedDiffs lists the testdata catalogs on which airlock and opm validate are
// known to disagree, with the reason (docs/conformance.md).
var expectedDiffs = map[string]*knownDiff{
	"prune-invalid/custom-schema-names": diffCustomSchemaName,
}

// verdicts are the results of opm validate and of airlock on one catalog.
type verdicts struct {
	opm, ours, cli error
}

// verdict runs both validators on dir; airlock twice: on the catalog loaded with
// property values (ElideHeavy false) and as the CLI does (heavy values elided).
func verdict(ctx context.Context, dir string) verdicts {
	return verdicts{
		opm:  opmValidate(ctx, dir),
		ours: ourValidate(ctx, dir, false),
		cli:  ourValidate(ctx, dir, true),
	}
}

// check compares the verdicts with what is expected: all three agree, or the
// documented difference.
func check(v verdicts, diff *knownDiff) string {
	want := knownDiff{opmAccepts: v.opm == nil, ourAccepts: v.opm == nil, cliAccepts: v.opm == nil}
	if diff != nil {
		want = *diff
	}
	if (v.opm == nil) == want.opmAccepts && (v.ours == nil) == want.ourAccepts && (v.cli == nil) == want.cliAccepts {
		return ""
	}
	msg := fmt.Sprintf("opm: %v; airlock: %v; airlock with heavy values elided (the CLI): %v", orOK(v.opm), orOK(v.ours), orOK(v.cli))
	if diff == nil {
		return "disagreement: " + msg
	}
	if diff.bug {
		return fmt.Sprintf("the known defect changed (fixed? then remove it from the table): %s; now %s", diff.why, msg)
	}
	return fmt.Sprintf("expected the documented difference (%s), got %s", diff.why, msg)
}

func orOK(err error) any {
	if err == nil {
		return "valid"
	}
	s := err.Error()
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// TestValidateAgreement validates every catalog, unchanged, with both.
func TestValidateAgreement(t *testing.T) {
	ctx := context.Background()
	var agree, total int
	for _, src := range allSources(t) {
		t.Run(src.Name, func(t *testing.T) {
			v := verdict(ctx, src.Dir)
			opmErr, ourErr := v.opm, v.ours
			total++
			if msg := check(v, expectedDiffs[src.Name]); msg != "" {
				t.Fatal(msg)
			}
			agree++
			switch src.Kind {
			case "real", "gen", "filter":
				if opmErr != nil {
					t.Errorf("opm rejects a catalog that must be valid: %v", opmErr)
				}
			case "invalid":
				if ourErr == nil && expectedDiffs[src.Name] == nil {
					t.Errorf("airlock accepts a catalog of testdata/invalid")
				}
			}
			t.Logf("opm: %v; airlock: %v", orOK(opmErr), orOK(ourErr))
		})
	}
	t.Logf("validate: %d catalogs, %d as expected", total, agree)
}

// mutationPackages picks the packages of a catalog to mutate: all of them for
// small catalogs, else the first, the middle and the last by name, plus the one
// with the most channels.
func mutationPackages(pkgs []string, sc *splitCatalog) []string {
	if len(pkgs) <= 4 {
		return pkgs
	}
	pick := map[string]bool{pkgs[0]: true, pkgs[len(pkgs)/2]: true, pkgs[len(pkgs)-1]: true}
	best, most := "", -1
	for _, p := range pkgs {
		if n := len(sc.parts[p].Channels); n > most {
			best, most = p, n
		}
	}
	pick[best] = true
	out := make([]string, 0, len(pick))
	for p := range pick {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// dirSize is the total size of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// wholeCatalogLimit: catalogs up to this size are mutated in place (the mutated
// package among all the others); larger ones are mutated package by package, the
// package alone (with the documents that name no package), which keeps the run
// short: both validators check packages independently of each other.
const wholeCatalogLimit = 3 << 20

// TestValidateMutations applies every mutation of the table to packages of every
// valid catalog and checks that opm and airlock accept and reject the same ones.
func TestValidateMutations(t *testing.T) {
	ctx := context.Background()
	var srcs []source
	for _, s := range allSources(t) {
		if s.Kind != "invalid" {
			srcs = append(srcs, s)
		}
	}
	counts := map[string][2]int{} // mutation -> [applied, rejected by both]
	var total, agree int
	for _, src := range srcs {
		t.Run(src.Name, func(t *testing.T) {
			if expectedDiffs[src.Name] != nil {
				t.Skip("a known difference")
			}
			cfg, err := opmLoad(ctx, src.Dir)
			if err != nil {
				t.Skipf("opm cannot load it: %v", err)
			}
			if opmValidateCfg(cfg) != nil {
				t.Skip("not a valid catalog")
			}
			base := t.TempDir()
			sc, err := newSplitCatalog(cfg, filepath.Join(base, "base"))
			if err != nil {
				t.Fatal(err)
			}
			whole := dirSize(src.Dir) <= wholeCatalogLimit
			pkgs := sc.packages()
			mutated := mutationPackages(pkgs, sc)
			for _, pkg := range mutated {
				view := sc
				if !whole {
					view = &splitCatalog{dir: sc.dir, parts: sc.parts, names: []string{pkg}}
					if _, ok := sc.parts[""]; ok {
						view.names = []string{"", pkg}
					}
				}
				for i, m := range mutations {
					dir := filepath.Join(base, fmt.Sprintf("%s-%d", pkg, i))
					ok, err := view.mutate(m, pkg, dir)
					if err != nil {
						t.Fatalf("%s on %s: %v", m.name, pkg, err)
					}
					if !ok {
						continue
					}
					v := verdict(ctx, dir)
					total++
					c := counts[m.name]
					c[0]++
					if v.opm != nil && v.ours != nil && v.cli != nil {
						c[1]++
					}
					counts[m.name] = c
					if msg := check(v, m.diff); msg != "" {
						t.Errorf("mutation %s on package %s: %s (catalog kept in %s)", m.name, pkg, msg, keep(t, dir))
					} else {
						agree++
					}
					if !t.Failed() {
						os.RemoveAll(dir)
					}
				}
			}
		})
	}
	var lines []string
	for _, m := range mutations {
		c := counts[m.name]
		lines = append(lines, fmt.Sprintf("%-32s applied %4d, rejected by both %4d", m.name, c[0], c[1]))
	}
	t.Logf("mutations: %d mutated catalogs, %d as expected\n%s", total, agree, strings.Join(lines, "\n"))
	for _, m := range mutations {
		if counts[m.name][0] == 0 {
			t.Errorf("mutation %s applied to no catalog", m.name)
		}
	}
}

// keep copies a failing mutated catalog out of the test's temporary directory when
// CONFORMANCE_KEEP names a directory, and returns where it is.
func keep(t *testing.T, dir string) string {
	dst := os.Getenv("CONFORMANCE_KEEP")
	if dst == "" {
		return "(set CONFORMANCE_KEEP=DIR to keep it)"
	}
	out := filepath.Join(dst, strings.ReplaceAll(t.Name(), "/", "_")+"_"+filepath.Base(dir))
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		return "(copy failed: " + err.Error() + ")"
	}
	return out
}
