package prune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

const filterTestdata = "testdata/filter"

// loadFilterCatalog loads a catalog of testdata/filter/_catalogs as the CLI does.
func loadFilterCatalog(t testing.TB, root string) *fbc.Catalog {
	t.Helper()
	c, err := fbc.LoadDir(context.Background(), root, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatalf("load %s: %v", root, err)
	}
	return c
}

// listing renders a catalog compactly: per package its default channel, channels
// with their entries and edges, bundles, deprecations and other blobs.
func listing(c *fbc.Catalog) string {
	var b strings.Builder
	for _, p := range c.Packages {
		fmt.Fprintf(&b, "package %s default=%s\n", p.Name, p.DefaultChannel)
		for _, ch := range p.Channels {
			fmt.Fprintf(&b, "  channel %s\n", ch.Name)
			for _, e := range ch.Entries {
				fmt.Fprintf(&b, "    %s", e.Name)
				if e.Replaces != "" {
					fmt.Fprintf(&b, " replaces=%s", e.Replaces)
				}
				if len(e.Skips) > 0 {
					fmt.Fprintf(&b, " skips=%s", strings.Join(e.Skips, ","))
				}
				if e.SkipRange != "" {
					fmt.Fprintf(&b, " skipRange=%q", e.SkipRange)
				}
				b.WriteString("\n")
			}
		}
		names := make([]string, len(p.Bundles))
		for i, bu := range p.Bundles {
			names[i] = bu.Name
		}
		fmt.Fprintf(&b, "  bundles: %s\n", strings.Join(names, " "))
		for _, d := range p.Deprecations {
			for _, e := range d.Entries {
				fmt.Fprintf(&b, "  deprecated %s %s: %s\n", e.Reference.Schema, e.Reference.Name, e.Message)
			}
		}
		for _, m := range p.Others {
			fmt.Fprintf(&b, "  blob %s %s\n", m.Schema, m.Name)
		}
	}
	for _, m := range c.Others {
		fmt.Fprintf(&b, "blob %s %s\n", m.Schema, m.Name)
	}
	return b.String()
}

// TestFilterGolden runs every case of testdata/filter/<case>: file "source" names
// the input catalog (relative to testdata/filter), config.yaml is an
// ImageSetConfiguration with one operator entry, expected.txt is the listing of
// the filtered catalog followed by the explanation, or the error.
func TestFilterGolden(t *testing.T) {
	cases, err := os.ReadDir(filterTestdata)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range cases {
		if !d.IsDir() || strings.HasPrefix(d.Name(), "_") {
			continue
		}
		n++
		dir := filepath.Join(filterTestdata, d.Name())
		t.Run(d.Name(), func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, "source"))
			if err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(filterTestdata, strings.TrimSpace(string(src)))
			cfg, err := imageset.LoadFile(filepath.Join(dir, "config.yaml"))
			if err != nil {
				t.Fatalf("config: %v", err)
			}
			if len(cfg.Mirror.Operators) != 1 {
				t.Fatalf("config.yaml must have exactly one operator entry")
			}
			in := loadFilterCatalog(t, root)
			before := listing(in)
			out, expl, err := Filter(in, cfg.Mirror.Operators[0], FilterOptions{})
			if after := listing(in); after != before {
				t.Errorf("Filter modified its input catalog:\n%s", after)
			}
			var got bytes.Buffer
			if err != nil {
				if !errors.Is(err, ErrFilter) {
					t.Errorf("error does not wrap ErrFilter: %v", err)
				}
				fmt.Fprintf(&got, "error: %v\n", err)
			} else {
				if err := validate.Catalog(out); err != nil {
					t.Errorf("output does not validate: %v", err)
				}
				got.WriteString(listing(out))
				got.WriteString("--- explain\n")
				if err := expl.WriteText(&got); err != nil {
					t.Fatal(err)
				}
				checkExplanation(t, out, expl)
				checkRoundTrip(t, out)
			}
			golden.Check(t, filepath.Join(dir, "expected.txt"), got.Bytes())
		})
	}
	if n < 15 {
		t.Errorf("only %d golden cases found", n)
	}
}

// checkExplanation checks that the explanation lists exactly the kept bundles,
// each with at least one reason.
func checkExplanation(t *testing.T, out *fbc.Catalog, expl *Explanation) {
	t.Helper()
	if len(expl.Packages) != len(out.Packages) {
		t.Errorf("explanation has %d packages, catalog %d", len(expl.Packages), len(out.Packages))
		return
	}
	for _, p := range out.Packages {
		pe := expl.Package(p.Name)
		if pe == nil {
			t.Errorf("package %s not explained", p.Name)
			continue
		}
		if len(pe.Bundles) != len(p.Bundles) {
			t.Errorf("package %s: %d bundles explained, %d kept", p.Name, len(pe.Bundles), len(p.Bundles))
		}
		for _, b := range p.Bundles {
			be := pe.Bundle(b.Name)
			if be == nil || len(be.Reasons) == 0 {
				t.Errorf("package %s bundle %s kept without a reason", p.Name, b.Name)
			}
		}
	}
}

// checkRoundTrip writes the filtered catalog and loads it back: it must validate
// and list the same content.
func checkRoundTrip(t *testing.T, out *fbc.Catalog) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	if err := fbc.Write(context.Background(), out, dir, fbc.WriteOptions{}); err != nil {
		t.Fatalf("write: %v", err)
	}
	back, err := fbc.LoadDir(context.Background(), dir, fbc.LoadOptions{})
	if err != nil {
		t.Fatalf("load written catalog: %v", err)
	}
	if err := validate.Catalog(back); err != nil {
		t.Errorf("written catalog does not validate: %v", err)
	}
	if got, want := listing(back), listing(out); got != want {
		t.Errorf("written catalog differs:\n--- written\n%s\n--- filtered\n%s", got, want)
	}
}

// buildChannel makes a package with one channel from entries "name<replaces[;skip,skip]"
// and bundles versioned from their names (name "x.vV").
func buildPackage(name, def string, channels map[string][]string) *fbc.Package {
	p := &fbc.Package{Name: name, DefaultChannel: def, Declared: 1}
	seen := map[string]bool{}
	for _, chName := range sortedKeysOf(channels) {
		ch := &fbc.Channel{Name: chName, Package: name}
		for _, spec := range channels[chName] {
			var e fbc.ChannelEntry
			parts := strings.SplitN(spec, ";", 2)
			if len(parts) == 2 {
				e.Skips = strings.Split(parts[1], ",")
			}
			n, r, _ := strings.Cut(parts[0], "<")
			e.Name, e.Replaces = n, r
			ch.Entries = append(ch.Entries, e)
			if !seen[n] {
				seen[n] = true
				_, ver, _ := strings.Cut(n, ".v")
				p.Bundles = append(p.Bundles, filterTestBundle(name, n, ver))
			}
		}
		p.Channels = append(p.Channels, ch)
	}
	slices.SortFunc(p.Bundles, func(a, b *fbc.Bundle) int { return strings.Compare(a.Name, b.Name) })
	return p
}

func filterTestBundle(pkg, name, version string) *fbc.Bundle {
	return &fbc.Bundle{
		Name:       name,
		Package:    pkg,
		Image:      "quay.io/example/" + pkg + "-bundle:v" + version,
		Properties: []fbc.Property{{Type: fbc.PropertyPackage, Value: []byte(fmt.Sprintf(`{"packageName":%q,"version":%q}`, pkg, version))}},
	}
}

func sortedKeysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func keptEntries(c *fbc.Catalog, pkg, ch string) []string {
	for _, p := range c.Packages {
		if p.Name != pkg {
			continue
		}
		for _, x := range p.Channels {
			if x.Name == ch {
				var out []string
				for _, e := range x.Entries {
					out = append(out, e.Name)
				}
				return out
			}
		}
	}
	return nil
}

// TestFilterRanges checks the range algorithm on graphs built in Go.
func TestFilterRanges(t *testing.T) {
	// a.v1.0.0 <- a.v1.1.0 <- a.v1.2.0 <- a.v2.0.0 (skips a.v1.1.5) <- a.v3.0.0;
	// a.v1.1.5 replaces a.v1.1.0 and is skipped by a.v2.0.0.
	linear := buildPackage("a", "stable", map[string][]string{"stable": {
		"a.v1.0.0", "a.v1.1.0<a.v1.0.0", "a.v1.1.5<a.v1.1.0", "a.v1.2.0<a.v1.1.0", "a.v2.0.0<a.v1.2.0;a.v1.1.5", "a.v3.0.0<a.v2.0.0",
	}})
	// A chain where the head replaces and skips the same bundle: b.v3 replaces b.v2
	// and skips it, b.v2 replaces b.v1, b.v1 is skipped by b.v3 too.
	skipStop := buildPackage("b", "stable", map[string][]string{"stable": {
		"b.v1.0.0", "b.v2.0.0<b.v1.0.0", "b.v3.0.0<b.v2.0.0;b.v2.0.0,b.v1.0.0",
	}})
	tests := []struct {
		name     string
		pkg      *fbc.Package
		min, max string
		want     []string
	}{
		{"min only", linear, "1.2.0", "", []string{"a.v1.2.0", "a.v2.0.0", "a.v3.0.0"}},
		{"max only", linear, "", "1.1.0", []string{"a.v1.0.0", "a.v1.1.0"}},
		{"middle", linear, "1.1.0", "2.0.0", []string{"a.v1.1.0", "a.v1.1.5", "a.v1.2.0", "a.v2.0.0"}},
		{"skipped only", linear, "1.1.5", "1.1.9", []string{"a.v1.1.5", "a.v2.0.0"}},
		{"exact", linear, "1.2.0", "1.2.0", []string{"a.v1.2.0"}},
		{"exact skipped", linear, "1.1.5", "1.1.5", []string{"a.v1.1.5"}},
		{"all", linear, "0.0.1", "9.0.0", []string{"a.v1.0.0", "a.v1.1.0", "a.v1.1.5", "a.v1.2.0", "a.v2.0.0", "a.v3.0.0"}},
		{"tolerant v prefix", linear, "v2", "", []string{"a.v2.0.0", "a.v3.0.0"}},
		{"skip stop", skipStop, "1.0.0", "2.0.0", []string{"b.v1.0.0", "b.v2.0.0"}},
		{"skip stop head", skipStop, "1.0.0", "3.0.0", []string{"b.v1.0.0", "b.v2.0.0", "b.v3.0.0"}},
		{"skip stop low", skipStop, "", "1.0.0", []string{"b.v1.0.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fbc.Catalog{Packages: []*fbc.Package{tt.pkg}}
			op := imageset.Operator{Packages: []imageset.IncludePackage{{Name: tt.pkg.Name, IncludeBundle: imageset.IncludeBundle{MinVersion: tt.min, MaxVersion: tt.max}}}}
			out, _, err := Filter(c, op, FilterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := keptEntries(out, tt.pkg.Name, "stable")
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterErrors(t *testing.T) {
	pkg := buildPackage("a", "stable", map[string][]string{
		"stable": {"a.v1.0.0", "a.v1.1.0<a.v1.0.0"},
		"fast":   {"a.v2.0.0"},
	})
	c := &fbc.Catalog{Packages: []*fbc.Package{pkg}}
	tests := []struct {
		name string
		op   imageset.Operator
		want string
	}{
		{"missing package", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "b"}, {Name: "aa"}}}, `the catalog has no packages "b", "aa" (did you mean a?)`},
		{"missing channel", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", Channels: []imageset.IncludeChannel{{Name: "stabel"}}}}}, `package "a" has no channel "stabel" (did you mean stable?)`},
		{"bad version", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", IncludeBundle: imageset.IncludeBundle{MinVersion: "one"}}}}, `invalid minVersion "one"`},
		{"min above max", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", IncludeBundle: imageset.IncludeBundle{MinVersion: "2.0.0", MaxVersion: "1.0.0"}}}}, "is greater than maxVersion"},
		{"full and range", imageset.Operator{Full: true, Packages: []imageset.IncludePackage{{Name: "a", IncludeBundle: imageset.IncludeBundle{MinVersion: "1.0.0"}}}}, "full: true cannot be combined"},
		{"both levels", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", IncludeBundle: imageset.IncludeBundle{MinVersion: "1.0.0"}, Channels: []imageset.IncludeChannel{{Name: "stable", IncludeBundle: imageset.IncludeBundle{MaxVersion: "2.0.0"}}}}}}, "set them at one level only"},
		{"duplicate package", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a"}, {Name: "a"}}}, "listed twice"},
		{"unknown bundle", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", SelectedBundles: []imageset.SelectedBundle{{Name: "a.v1.1"}}}}}, `no bundle "a.v1.1" (did you mean`},
		{"selected bundle outside channels", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", Channels: []imageset.IncludeChannel{{Name: "stable"}}, SelectedBundles: []imageset.SelectedBundle{{Name: "a.v1.0.0"}, {Name: "a.v2.0.0"}}}}}, `selected bundle "a.v2.0.0" is in none of the selected channels`},
		{"override unknown", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", DefaultChannel: "beta"}}}, `defaultChannel "beta" is not a channel of the package`},
		{"override dropped", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", DefaultChannel: "fast", Channels: []imageset.IncludeChannel{{Name: "stable"}}}}}, `defaultChannel "fast" is not among the kept channels (stable)`},
		{"default range empty", imageset.Operator{Packages: []imageset.IncludePackage{{Name: "a", IncludeBundle: imageset.IncludeBundle{MinVersion: "1.5.0", MaxVersion: "1.9.0"}}}}, `leaves its default channel "stable" empty (no bundle in range >=1.5.0 <=1.9.0 (channel versions: 1.0.0 to 1.1.0))`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Filter(c, tt.op, FilterOptions{})
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !errors.Is(err, ErrFilter) {
				t.Errorf("error does not wrap ErrFilter: %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestFilterInvalidSource: a source channel with two heads is reported, not papered over.
func TestFilterInvalidSource(t *testing.T) {
	pkg := buildPackage("a", "stable", map[string][]string{"stable": {"a.v1.0.0", "a.v2.0.0"}})
	_, _, err := Filter(&fbc.Catalog{Packages: []*fbc.Package{pkg}}, imageset.Operator{}, FilterOptions{})
	if err == nil || !strings.Contains(err.Error(), `package "a" channel "stable" of the source catalog: multiple channel heads found in graph: a.v1.0.0, a.v2.0.0`) {
		t.Fatalf("got %v", err)
	}
}

// TestFilterDependencies checks resolution on the oc-mirror e2e catalog: foo
// requires bar <0.2.0 (olm.package.required) and test.bar/v1alpha1 Bar (olm.gvk.required).
func TestFilterDependencies(t *testing.T) {
	root := filepath.Join(filterTestdata, "_catalogs", "ocmirror-extra-blobs")
	c := loadFilterCatalog(t, root)
	op := imageset.Operator{Packages: []imageset.IncludePackage{{Name: "foo"}}}
	out, expl, err := Filter(c, op, FilterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := keptEntries(out, "bar", "alpha"); !slices.Equal(got, []string{"bar.v0.1.0", "bar.v0.2.0", "bar.v1.0.0"}) {
		t.Errorf("bar alpha kept %v", got)
	}
	if got := keptEntries(out, "bar", "stable"); !slices.Equal(got, []string{"bar.v1.0.0"}) {
		t.Errorf("bar stable kept %v", got)
	}
	be := expl.Package("bar").Bundle("bar.v0.1.0")
	if be == nil || be.Reasons[0].Kind != ReasonDependency || !strings.Contains(be.Reasons[0].Detail, "foo/foo.v0.3.1") {
		t.Errorf("bar.v0.1.0 explanation: %+v", be)
	}
	op.SkipDependencies = true
	out, _, err = Filter(c, op, FilterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Packages) != 1 {
		t.Errorf("skipDependencies kept %d packages", len(out.Packages))
	}
}

// FuzzFilter filters the sample catalog with arbitrary ranges and channel
// choices: Filter must return a valid catalog or an ErrFilter error, never panic.
func FuzzFilter(f *testing.F) {
	c := loadFilterCatalog(f, filepath.Join(filterTestdata, "_catalogs", "sample"))
	f.Add("etcd", "stable", "1.1.0", "1.2.0", false, false)
	f.Add("etcd", "", "1.1.1", "1.1.1", false, true)
	f.Add("storage", "beta", "", "1.1.0", false, false)
	f.Add("vault", "", "", "", true, false)
	f.Add("backup", "stable", "v0.2", "", false, false)
	f.Fuzz(func(t *testing.T, pkg, ch, min, max string, full, skipDeps bool) {
		ip := imageset.IncludePackage{Name: pkg}
		if ch != "" {
			ip.Channels = []imageset.IncludeChannel{{Name: ch, IncludeBundle: imageset.IncludeBundle{MinVersion: min, MaxVersion: max}}}
		} else {
			ip.IncludeBundle = imageset.IncludeBundle{MinVersion: min, MaxVersion: max}
		}
		op := imageset.Operator{Packages: []imageset.IncludePackage{ip}, Full: full, SkipDependencies: skipDeps}
		out, _, err := Filter(c, op, FilterOptions{})
		if err != nil {
			if !errors.Is(err, ErrFilter) {
				t.Fatalf("error without ErrFilter: %v", err)
			}
			return
		}
		if err := validate.Catalog(out); err != nil {
			t.Fatalf("invalid output: %v", err)
		}
	})
}

func BenchmarkFilter(b *testing.B) {
	root := fixtures.Require(b, "real-catalogs/community-operators-prod-v4.21/catalogs/v4.21")
	c := loadFilterCatalog(b, root)
	for _, bc := range []struct {
		name string
		op   imageset.Operator
	}{
		{"heads", imageset.Operator{}},
		{"full", imageset.Operator{Full: true}},
		{"channels-full", realConfigs(c)["channels-full-nodeps"]},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Filter(c, bc.op, FilterOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
