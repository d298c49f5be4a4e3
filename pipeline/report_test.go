package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/browser"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/report"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestReportMirrorToDisk: a mirror-to-disk run writes report.html with the kept
// packages and why, the upgrade graph, the archive and the stages; airlock
// report writes the same page again from report.json; real Chromium loads it
// with no console error and no network request.
func TestReportMirrorToDisk(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	o := opts(e.config(t, "    - name: foo"))
	o.Destination.Location = location.File(dir)
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	page := workspace.Dir(res.WorkingDir).ReportHTMLPath()
	first, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(first)
	for _, want := range []string{
		"<h1>airlock mirror-to-disk</h1>", "foo", "bar</a> <span class=\"muted\">(dependency)</span>", "<svg", "channel head",
		"Archive <code>", "airlock_000001.tar", ">catalogs<", ">plan<", ">copy<", ">archive<", e.extra, "Nothing failed.",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	var rec report.Run
	b, _ := os.ReadFile(workspace.Dir(res.WorkingDir).ReportDataPath())
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Images) != len(res.Images) || rec.Archive == nil || rec.BytesSent == 0 {
		t.Errorf("report.json: %d images (want %d), archive %v, bytes %d", len(rec.Images), len(res.Images), rec.Archive, rec.BytesSent)
	}
	// Regenerating from report.json gives the same page.
	os.Remove(page)
	if _, err := pipeline.RegenerateReport(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.RegenerateReport(t.TempDir()); err == nil || !strings.Contains(err.Error(), "has no report.json") {
		t.Errorf("empty dir: %v", err)
	}
	again, _ := os.ReadFile(page)
	if !bytes.Equal(first, again) {
		t.Error("airlock report wrote a different page from the same report.json")
	}
	openInBrowser(t, page, "report.png")
}

// TestReportFailures: a run where an image fails lists it, with the reason, in
// the report.
func TestReportFailures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	cfg := fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: %s
    packages:
    - name: baz
  additionalImages:
  - name: %s/tools/absent:1.0
`, e.seeded.Catalog, e.src.Host())
	p := filepath.Join(t.TempDir(), "isc.yaml")
	os.WriteFile(p, []byte(cfg), 0o644)
	o := opts(p)
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	res, err := pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, pipeline.ErrIncomplete) {
		t.Fatalf("error %v, want ErrIncomplete", err)
	}
	b, err := os.ReadFile(workspace.Dir(res.WorkingDir).ReportHTMLPath())
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	failures := html[strings.Index(html, `id="failures"`):strings.Index(html, `id="stages"`)]
	if !strings.Contains(failures, "tools/absent:1.0") || !strings.Contains(failures, `class="bad">failed`) {
		t.Errorf("failures section does not list the absent image:\n%s", failures)
	}
	if !strings.Contains(html, dst.Host()+"/mirror/tools/absent") {
		t.Error("the destination repository table lacks the failed image's repository")
	}
}

// openInBrowser loads page in headless Chromium and fails on any console error or
// network request. With AIRLOCK_SCREENSHOTS=DIR it saves a screenshot there.
func openInBrowser(t *testing.T, page, shot string) {
	t.Helper()
	bin := browser.Find()
	if bin == "" {
		// Skipped, never passed: the checks above stand (a failure before
		// this point still fails the test), the page was not opened.
		t.Skip("no chromium: the report was not opened in a browser (apt-get install chromium; .ci/run installs it)")
	}
	out := os.Getenv("AIRLOCK_SCREENSHOTS")
	r, err := browser.Open(context.Background(), bin, page, browser.Options{
		Eval:       `[document.querySelectorAll("svg").length, document.querySelectorAll("h2").length]`,
		Screenshot: out != "", Width: 1280, Height: 1400,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) > 0 {
		t.Errorf("console errors: %q", r.Errors)
	}
	if len(r.Requests) > 0 {
		t.Errorf("network requests: %q", r.Requests)
	}
	var counts []int
	json.Unmarshal(r.Value, &counts)
	if len(counts) != 2 || counts[0] == 0 || counts[1] < 6 {
		t.Errorf("the browser sees %v svg pictures and sections, want both", counts)
	}
	if out != "" {
		os.WriteFile(filepath.Join(out, shot), r.Screenshot, 0o644)
	}
}
