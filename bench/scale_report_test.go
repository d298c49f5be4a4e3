package bench

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/browser"
)

// TestScaleReportOnly runs the scale section's report rows (-scale-report-only)
// at two tiny sizes through Run: no airlock binary is built, a row per size
// gives the page's size and its open time, and the growth row follows; the
// section has a table of its own in the current tables.
func TestScaleReportOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("opens pages in headless Chromium")
	}
	if browser.Find() == "" {
		t.Skip("no chromium (apt-get install chromium)")
	}
	defer func(n int) { reportOpens = n }(reportOpens)
	reportOpens = 1
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := Run(context.Background(), Config{RepoRoot: root, WorkDir: t.TempDir(), ScaleSizes: []int{200, 400}, ScaleReportOnly: true, Out: &out})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("%v %v\n%s", err, res.Failures, out.String())
	}
	var opened int
	for _, r := range res.Rows {
		if r.Name == "scale report: report.html opened in headless Chromium" {
			opened++
			if r.Wall <= 0 || !strings.Contains(r.Note, "per image") {
				t.Errorf("row %+v: no open time or size", r)
			}
		}
	}
	if opened != 2 || !strings.Contains(out.String(), "scale report: growth per image, 361 → 561 images") {
		t.Errorf("%d open rows, want 2; table:\n%s", opened, out.String())
	}
	if k := sectionKey(res.Rows[0].Name); k != "scale report: report.html of generated runs shaped like the scale section's" {
		t.Errorf("the rows' section is %q", k)
	}
}
