package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	stdhtml "html"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/browser"
	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
	"github.com/airlock-mirror/airlock/prune"
	"github.com/airlock-mirror/airlock/prune/graph"
)

// bigRun is a run of n images over 20 packages of a real catalog, every package
// with the upgrade graph of a real package drawn by prune/graph.
func bigRun(t testing.TB, n int) *Run {
	t.Helper()
	dir := fixtures.Require(t, "real-catalogs/kube-descheduler-v4.20/v4.20/catalog")
	var svg bytes.Buffer
	if err := graph.Draw(context.Background(), graph.DrawOptions{Dir: dir, Package: "cluster-kube-descheduler-operator", Format: graph.FormatSVG, Collapse: graph.DefaultCollapse}, &svg); err != nil {
		t.Fatal(err)
	}
	r := &Run{Workflow: "mirror-to-mirror", Destination: "mirror.example.com/ns", ConfigPath: "isc.yaml",
		Config: "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\n", Duration: 95 * time.Second,
		Stages: []Stage{{"catalogs", 3 * time.Second}, {"plan", 2 * time.Second}, {"copy", 90 * time.Second}}}
	cat := &Catalog{Source: "registry.example.com/index:v4.20", Rebuilt: true, Destination: "mirror.example.com/ns/index:v4.20"}
	for p := 0; p < 20; p++ {
		pkg := &Package{Name: fmt.Sprintf("operator-%02d", p), DefaultChannel: "stable", Graph: svg.String(),
			Channels: []prune.ChannelExplanation{{Name: "stable", Entries: []string{"a.v1", "a.v2"}}},
			Bundles: []prune.BundleExplanation{{Name: "a.v2", Version: "2.0.0", Reasons: []prune.Reason{{Kind: prune.ReasonHead, Channel: "stable"}}},
				{Name: "a.v1", Version: "1.0.0", Reasons: []prune.Reason{{Kind: prune.ReasonRequested, Channel: "stable", Detail: "in range >=1.0.0"}}}}}
		cat.Packages = append(cat.Packages, pkg)
	}
	r.Catalogs = []*Catalog{cat}
	for i := 0; i < n; i++ {
		pkg := cat.Packages[i%20]
		src := fmt.Sprintf("quay.io/vendor%d/image-%03d@sha256:%064x", i%7, i, i)
		pkg.Images = append(pkg.Images, src)
		im := Image{Source: src, Kind: "operator", Digest: fmt.Sprintf("sha256:%064x", i), DestRepo: fmt.Sprintf("mirror.example.com/ns/vendor%d/image-%03d", i%7, i),
			Status: "copied", Bytes: int64(i) * 1 << 20, Origins: []string{cat.Source}}
		im.Destination = im.DestRepo + "@" + im.Digest
		if i%97 == 0 {
			im.Status, im.Error = "failed", "manifest unknown: the source has no such image"
		}
		switch i % 3 { // attachments looked for: signed with 2 attachments, unsigned, or signed alone
		case 0:
			im.Signature, im.Attachments = "signed", 2
		case 1:
			im.Signature = "unsigned"
		case 2:
			im.Signature, im.Attachments = "signed", 1
		}
		r.Images = append(r.Images, im)
	}
	return r
}

// TestReportDeterministic: the same run gives the same page, whatever the
// order its lists were recorded in.
func TestReportDeterministic(t *testing.T) {
	a, b := bigRun(t, 60), bigRun(t, 60)
	for i, j := 0, len(b.Images)-1; i < j; i, j = i+1, j-1 {
		b.Images[i], b.Images[j] = b.Images[j], b.Images[i]
	}
	b.Catalogs[0].Packages[0], b.Catalogs[0].Packages[1] = b.Catalogs[0].Packages[1], b.Catalogs[0].Packages[0]
	var pa, pb bytes.Buffer
	a.Sort()
	b.Sort()
	if err := Write(&pa, a); err != nil {
		t.Fatal(err)
	}
	if err := Write(&pb, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pa.Bytes(), pb.Bytes()) {
		t.Error("two recordings of the same run give different pages")
	}
	html := pa.String()
	for _, want := range []string{"operator-00", "in range &gt;=1.0.0", "manifest unknown", "<svg", "mirror.example.com/ns/vendor0/image-000",
		"<th>signature</th>", `<td>signed, 2 attachments carried</td>`, `<td class="bad">unsigned</td>`, `<td>signed, 1 attachment carried</td>`,
		`<b>40</b>signed, <span class="bad">20 unsigned</span>`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script src", "http://www.w3.org/Graphics/SVG/1.1/DTD", "<?xml", "<link", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("page holds %q: it must not load anything", bad)
		}
	}
	checkScripts(t, html)
}

// checkScripts: the page runs one script, the pager, which its
// Content-Security-Policy allows by its hash; every other script element is
// a data block.
func checkScripts(t *testing.T, html string) {
	t.Helper()
	h := sha256.Sum256([]byte(pagerScript))
	csp := "script-src 'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'\">"
	if !strings.Contains(stdhtml.UnescapeString(html), csp) {
		t.Errorf("the Content-Security-Policy does not allow the pager by its hash (%s)", csp)
	}
	if n, data := strings.Count(html, "<script"), strings.Count(html, `<script type="application/json" id="`); n != data+1 || !strings.Contains(html, "<script>"+pagerScript+"</script>") {
		t.Errorf("the page has %d script elements, %d of them data blocks: want the pager and data blocks", n, data)
	}
}

func TestRegenerateErrors(t *testing.T) {
	dir := t.TempDir()
	data, page := filepath.Join(dir, "report.json"), filepath.Join(dir, "report.html")
	if err := Regenerate(data, page); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty dir: %v", err)
	}
	os.WriteFile(data, []byte("{"), 0o644)
	if err := Regenerate(data, page); err == nil || !strings.Contains(err.Error(), "run airlock mirror again") {
		t.Errorf("corrupt report.json: %v", err)
	}
}

// TestReportInBrowser opens the page of a 500-image run in headless Chromium:
// no console error, no network request, every graph drawn. With
// AIRLOCK_SCREENSHOTS=DIR it saves a screenshot there.
func TestReportInBrowser(t *testing.T) {
	bin := browser.Find()
	if bin == "" {
		t.Skip("no chromium (apt-get install chromium)")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := Save(filepath.Join(dir, "report.json"), page, bigRun(t, 500)); err != nil {
		t.Fatal(err)
	}
	// [graph nodes drawn, how far the page is wider than the window]
	eval := `[document.querySelectorAll("svg g.node").length, document.documentElement.scrollWidth - document.documentElement.clientWidth]`
	r, err := browser.Open(context.Background(), bin, page, browser.Options{Eval: eval})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) > 0 || len(r.Requests) > 0 {
		t.Errorf("errors %q, requests %q", r.Errors, r.Requests)
	}
	var v [2]int
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("evaluated %s: %v", r.Value, err)
	}
	if v[0] == 0 {
		t.Errorf("the browser shows no graph node (%s)", r.Value)
	}
	if v[1] > 0 { // long references in the Failures table wrap
		t.Errorf("the page is %d px wider than the 1280 px window", v[1])
	}
}

// BenchmarkReport500 writes report.json and report.html for a 500-image run.
func BenchmarkReport500(b *testing.B) {
	r := bigRun(b, 500)
	dir := b.TempDir()
	b.ResetTimer()
	for b.Loop() {
		if err := Save(filepath.Join(dir, "report.json"), filepath.Join(dir, "report.html"), r); err != nil {
			b.Fatal(err)
		}
	}
}
