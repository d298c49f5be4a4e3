package prune

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
)

// filterFixtureRoots returns every catalog root of the shared fixtures, read from
// the table of real-catalogs/SOURCES.md (relative paths).
func filterFixtureRoots(t testing.TB, base string) []string {
	raw, err := os.ReadFile(filepath.Join(base, "SOURCES.md"))
	if err != nil {
		fixtures.Missing(t, "real catalogs: %v", err)
	}
	var roots []string
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		cell := strings.TrimSpace(cells[2])
		if strings.HasPrefix(cell, "`") && strings.HasSuffix(cell, "`") && len(cell) > 2 {
			roots = append(roots, strings.Trim(cell, "`"))
		}
	}
	if len(roots) == 0 {
		t.Fatalf("no catalog root in %s/SOURCES.md", base)
	}
	return roots
}

var (
	fixtureMu    sync.Mutex
	fixtureCache = map[string]*fbc.Catalog{}
)

// loadFixtureCatalog loads a real catalog once per test binary (tests must not
// modify it: Filter and Images do not).
func loadFixtureCatalog(t testing.TB, root string) *fbc.Catalog {
	t.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if c, ok := fixtureCache[root]; ok {
		return c
	}
	c := loadFilterCatalog(t, root)
	fixtureCache[root] = c
	return c
}

// realConfigs derives operator entries from a catalog: heads only, full, a few
// packages, channel lists, ranges at both levels, dependencies on and off.
func realConfigs(c *fbc.Catalog) map[string]imageset.Operator {
	ops := map[string]imageset.Operator{
		"heads":        {},
		"heads-nodeps": {SkipDependencies: true},
		"full":         {Full: true},
	}
	var few, fewFull, chans, pkgRange, chRange, exact []imageset.IncludePackage
	for i, p := range c.Packages {
		if i%3 == 0 {
			few = append(few, imageset.IncludePackage{Name: p.Name})
			fewFull = append(fewFull, imageset.IncludePackage{Name: p.Name})
		}
		// every channel listed explicitly, default overridden to the last one
		ip := imageset.IncludePackage{Name: p.Name, DefaultChannel: p.Channels[len(p.Channels)-1].Name}
		for _, ch := range p.Channels {
			ip.Channels = append(ip.Channels, imageset.IncludeChannel{Name: ch.Name})
		}
		chans = append(chans, ip)
		// a range around the versions of the default channel
		var vers []string
		for _, ch := range p.Channels {
			if ch.Name != p.DefaultChannel {
				continue
			}
			for _, e := range ch.Entries {
				for _, b := range p.Bundles {
					if b.Name == e.Name {
						if v, err := fbc.BundleVersion(b); err == nil {
							vers = append(vers, v.String())
						}
					}
				}
			}
		}
		if len(vers) == 0 {
			continue
		}
		slices.SortFunc(vers, func(a, b string) int { return compareVersions(a, b) })
		lo, mid, hi := vers[0], vers[len(vers)/2], vers[len(vers)-1]
		pkgRange = append(pkgRange, imageset.IncludePackage{Name: p.Name, IncludeBundle: imageset.IncludeBundle{MinVersion: mid}})
		chRange = append(chRange, imageset.IncludePackage{Name: p.Name, Channels: []imageset.IncludeChannel{{Name: p.DefaultChannel, IncludeBundle: imageset.IncludeBundle{MinVersion: lo, MaxVersion: mid}}}})
		_ = hi
		exact = append(exact, imageset.IncludePackage{Name: p.Name, Channels: []imageset.IncludeChannel{{Name: p.DefaultChannel, IncludeBundle: imageset.IncludeBundle{MinVersion: mid, MaxVersion: mid}}}})
	}
	ops["few"] = imageset.Operator{Packages: few}
	ops["few-full"] = imageset.Operator{Packages: fewFull, Full: true}
	ops["channels"] = imageset.Operator{Packages: chans}
	ops["channels-full-nodeps"] = imageset.Operator{Packages: chans, Full: true, SkipDependencies: true}
	ops["pkg-range"] = imageset.Operator{Packages: pkgRange}
	ops["pkg-range-nodeps"] = imageset.Operator{Packages: pkgRange, SkipDependencies: true}
	ops["channel-range"] = imageset.Operator{Packages: chRange}
	ops["exact"] = imageset.Operator{Packages: exact}
	return ops
}

func compareVersions(a, b string) int {
	va, _ := semver.ParseTolerant(a)
	vb, _ := semver.ParseTolerant(b)
	return va.Compare(vb)
}

// TestFilterRealCatalogs filters every real catalog of the shared fixtures with a
// table of configurations: every output must pass Validate.
func TestFilterRealCatalogs(t *testing.T) {
	base := fixtures.Require(t, "real-catalogs")
	for _, rel := range filterFixtureRoots(t, base) {
		root := filepath.Join(base, rel)
		if testing.Short() && strings.HasPrefix(rel, "community-operators-prod") {
			continue // the largest fixtures; loading them under -race takes long
		}
		if _, err := os.Stat(root); err != nil {
			t.Logf("skip %s: %v", rel, err)
			continue
		}
		c := loadFixtureCatalog(t, root)
		if err := validate.Catalog(c); err != nil {
			t.Fatalf("%s: source does not validate: %v", rel, err)
		}
		ops := realConfigs(c)
		for _, name := range sortedKeysOf(ops) {
			op := ops[name]
			t.Run(strings.ReplaceAll(rel, "/", "_")+"/"+name, func(t *testing.T) {
				out, expl, err := Filter(c, op, FilterOptions{})
				if err != nil {
					// An exact version missing from a channel empties the default
					// channel: that is the documented error, anything else is not.
					if name == "exact" && strings.Contains(err.Error(), "empty") {
						t.Logf("expected error: %v", err)
						return
					}
					t.Fatalf("filter: %v", err)
				}
				// Filter validated out already; check the explanation and shapes.
				checkExplanation(t, out, expl)
				if name == "heads" || name == "heads-nodeps" {
					for _, p := range out.Packages {
						for _, ch := range p.Channels {
							if len(ch.Entries) < 1 {
								t.Errorf("%s/%s empty", p.Name, ch.Name)
							}
							if name == "heads-nodeps" && len(ch.Entries) != 1 {
								t.Errorf("heads only: %s/%s kept %d entries", p.Name, ch.Name, len(ch.Entries))
							}
						}
					}
				}
				if name == "full" && len(out.Packages) != len(c.Packages) {
					t.Errorf("full lost packages")
				}
			})
		}
	}
}
