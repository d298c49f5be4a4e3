package graph

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/browser"
	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/prune"
)

// realCatalog returns the root of a real catalog of the shared fixtures, or skips.
func realCatalog(t testing.TB, rel string) string {
	t.Helper()
	return fixtures.Require(t, "real-catalogs/"+rel)
}

const (
	descheduler = "kube-descheduler-v4.20/v4.20/catalog"
	jaeger      = "oc-mirror-testdata/tests/unit/testdata/configs"
	securesign  = "securesign-rhtas-v4.20/v4.20"
	community   = "community-operators-prod-v4.21/catalogs/v4.21"
)

// TestGolden draws real packages as DOT and Mermaid and compares them with
// testdata/golden (go test ./prune/graph -update rewrites them).
func TestGolden(t *testing.T) {
	tests := []struct {
		name, catalog, pkg, channel, config string
		// skipRangeOnly removes replaces and skips from every entry first, so
		// the graph is made of skipRange edges alone.
		skipRangeOnly bool
	}{
		{name: "descheduler", catalog: descheduler, pkg: "cluster-kube-descheduler-operator"},
		{name: "descheduler-range", catalog: descheduler, pkg: "cluster-kube-descheduler-operator", channel: "stable", config: "descheduler-range.yaml"},
		{name: "jaeger-skiprange-only", catalog: jaeger, pkg: "jaeger-product", skipRangeOnly: true},
		{name: "jaeger", catalog: jaeger, pkg: "jaeger-product"},
		{name: "policy-deprecated-heads", catalog: securesign, pkg: "policy-controller-operator", config: "policy-heads.yaml"},
		{name: "quay-range-collapsed", catalog: community, pkg: "project-quay", channel: "stable-3.8", config: "quay-range.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := realCatalog(t, tc.catalog)
			if tc.skipRangeOnly {
				dir = skipRangeOnlyCopy(t, dir)
			}
			opts := DrawOptions{Dir: dir, Package: tc.pkg, Channel: tc.channel, Collapse: DefaultCollapse}
			if tc.config != "" {
				opts.Operator, opts.ConfigSource = operatorOf(t, tc.config), tc.config
			}
			p, err := Prepare(context.Background(), opts) // what Draw writes, loaded once for both formats
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{FormatDOT, FormatMermaid} {
				var out bytes.Buffer
				if err := p.Write(context.Background(), &out, format); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join("testdata", "golden", tc.name+"."+format), out.Bytes())
			}
		})
	}
}

// operatorOf returns the one operator entry of testdata/name.
func operatorOf(t *testing.T, name string) *imageset.Operator {
	t.Helper()
	cfg, err := imageset.LoadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return &cfg.Mirror.Operators[0]
}

// skipRangeOnlyCopy writes the catalog in dir again with replaces and skips
// removed from every channel entry.
func skipRangeOnlyCopy(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	c, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Packages {
		for _, ch := range p.Channels {
			for i := range ch.Entries {
				ch.Entries[i].Replaces, ch.Entries[i].Skips = "", nil
			}
		}
	}
	out := filepath.Join(t.TempDir(), "catalog")
	if err := fbc.Write(ctx, c, out, fbc.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestColours checks the states a range gives on a real catalog: what the
// explanation keeps is kept, the rest of the channel pruned, the head kept.
func TestColours(t *testing.T) {
	dir := realCatalog(t, descheduler)
	ctx := context.Background()
	c, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	_, expl, err := prune.Filter(c, *operatorOf(t, "descheduler-range.yaml"), prune.FilterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(c, Options{Package: "cluster-kube-descheduler-operator", Explanation: expl, Collapse: -1})
	if err != nil {
		t.Fatal(err)
	}
	keptWant := map[string]bool{}
	for _, ch := range expl.Packages[0].Channels {
		for _, e := range ch.Entries {
			keptWant[ch.Name+"/"+e] = true
		}
	}
	counts := map[State]int{}
	for _, ch := range p.Channels {
		for _, n := range ch.Nodes {
			counts[n.State]++
			if want := keptWant[ch.Name+"/"+n.Name]; want != (n.State == StateKept) {
				t.Errorf("%s/%s: state %q, explanation keeps it: %v", ch.Name, n.Name, n.State, want)
			}
			if n.Head && ch.Name == "stable" && n.State != StateKept {
				t.Errorf("head %s not kept", n.Name)
			}
		}
	}
	if counts[StateKept] == 0 || counts[StatePruned] == 0 {
		t.Fatalf("a range must keep some and prune some: %v", counts)
	}
}

func TestBuildErrors(t *testing.T) {
	dir := realCatalog(t, descheduler)
	c, err := fbc.LoadDir(context.Background(), dir, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "no package given"},
		{Options{Package: "nope"}, `no package "nope"`},
		{Options{Package: "cluster-kube-descheduler-operator", Channel: "nope"}, `no channel "nope" (channels: 4.13, stable)`},
	} {
		if _, err := Build(c, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.opts, err, tc.want)
		}
	}
	if _, err := FormatOf("x.pdf"); err == nil {
		t.Error("x.pdf: no error")
	}
}

// TestPNG draws a real package as PNG (the SVG rasterized by headless
// Chromium): a picture of the SVG's size with the graph's ink on it; without
// Chromium, a clear error.
func TestPNG(t *testing.T) {
	dir := realCatalog(t, descheduler)
	opts := DrawOptions{Dir: dir, Package: "cluster-kube-descheduler-operator", Channel: "stable", Collapse: DefaultCollapse}
	if browser.Find() == "" {
		t.Skip("no chromium (.ci/run installs it)")
	}
	var svg, pic bytes.Buffer
	opts.Format = FormatSVG
	if err := Draw(context.Background(), opts, &svg); err != nil {
		t.Fatal(err)
	}
	opts.Format = FormatPNG
	if err := Draw(context.Background(), opts, &pic); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(pic.Bytes()))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	m := regexp.MustCompile(`<svg width="([0-9]+)pt" height="([0-9]+)pt"`).FindStringSubmatch(svg.String())
	if m == nil {
		t.Fatalf("no size in the SVG")
	}
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	b := img.Bounds()
	if dx, dy := b.Dx()-w*4/3, b.Dy()-h*4/3; dx < -2 || dx > 2 || dy < -2 || dy > 2 {
		t.Errorf("picture %dx%d, the SVG is %dx%d pt (%dx%d px)", b.Dx(), b.Dy(), w, h, w*4/3, h*4/3)
	}
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r+g+bl < 3*0x8000 {
				ink++
			}
		}
	}
	// Text, node borders and edges: a blank or boxless picture has far less.
	if frac := float64(ink) / float64(b.Dx()*b.Dy()); frac < 0.01 || frac > 0.5 {
		t.Errorf("%.1f%% of the picture is dark: not a drawn graph", 100*frac)
	}

	t.Setenv("AIRLOCK_CHROMIUM", "")
	t.Setenv("PATH", t.TempDir())
	if err := Draw(context.Background(), opts, &bytes.Buffer{}); !errors.Is(err, browser.ErrNoChromium) {
		t.Errorf("without chromium: %v", err)
	}
}

// TestSVG lays a real package out with Graphviz.
func TestSVG(t *testing.T) {
	dir := realCatalog(t, descheduler)
	out := filepath.Join(t.TempDir(), "g.svg")
	if err := Draw(context.Background(), DrawOptions{Dir: dir, Package: "cluster-kube-descheduler-operator", Output: out, Collapse: DefaultCollapse}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"<svg", "channel stable (default)", "v5.3.2", "(head)", "&gt;=5.0.0 &lt;5.1.0"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}
