package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/browser"
)

// openMS saves the page of an n-image run, opens it in headless Chromium and
// returns how long it took to load and lay out (ms), its size and its table
// rows; it fails the test on a console error or a network request.
func openMS(t *testing.T, bin string, n int) (ms float64, size int64, rows int) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := Save(filepath.Join(dir, "report.json"), page, bigRun(t, n)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	// [ms from navigation to the end of the load event, ms of a layout forced
	// after it, rows of every table]
	eval := `(() => { const n = performance.getEntriesByType("navigation")[0]; const t = performance.now();
		document.body.getBoundingClientRect(); document.documentElement.scrollHeight;
		return [n.loadEventEnd, performance.now() - t, document.querySelectorAll("tr").length]; })()`
	r, err := browser.Open(context.Background(), bin, page, browser.Options{Eval: eval})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) > 0 || len(r.Requests) > 0 {
		t.Errorf("%d images: errors %q, requests %q", n, r.Errors, r.Requests)
	}
	var v [3]float64
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("evaluated %s: %v", r.Value, err)
	}
	return v[0] + v[1], fi.Size(), int(v[2])
}

// TestReportOf20000ImagesStaysSmall opens the page of a 20,000-image run
// (failures, 20 packages' graphs) in headless Chromium: it loads without an
// error or a request, shows at most TableRows rows of each long table, and is
// about the size of a 500-image run's page, which is what keeps it quick to
// open. How long it takes is measured by the bench's scale rows (target 3 s,
// docs/benchmarks.md), never asserted here: a loaded machine's browser
// timings vary twofold and more.
func TestReportOf20000ImagesStaysSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 images: -short")
	}
	bin := browser.Find()
	if bin == "" {
		t.Skip("no chromium (apt-get install chromium)")
	}
	small, smallSize, _ := openMS(t, bin, 500)
	big, bigSize, rows := openMS(t, bin, 20000)
	t.Logf("report.html opened in %.0f ms with 500 images (%d bytes), %.0f ms with 20,000 (%d bytes, %d table rows)", small, smallSize, big, bigSize, rows)
	if rows > 3*TableRows+100 {
		t.Errorf("the page of 20,000 images has %d table rows: the long tables show at most %d each", rows, TableRows)
	}
	// The per-image part of the page is bounded by the row limit: 40 times
	// the images may at most double the page (failures' and packages'
	// sections grow a little with the run).
	if bigSize > 2*smallSize {
		t.Errorf("report.html of 20,000 images is %d bytes, of 500 images %d: the long tables are not limited", bigSize, smallSize)
	}
}

// TestLongTablesShowTheFirstRows: a run of more images than TableRows shows
// that many rows of every image and of the repositories, and says how many
// more report.json holds; a shorter run shows every row and says nothing.
func TestLongTablesShowTheFirstRows(t *testing.T) {
	for _, n := range []int{TableRows, TableRows + 3} {
		var page strings.Builder
		r := bigRun(t, n)
		r.Sort()
		if err := Write(&page, r); err != nil {
			t.Fatal(err)
		}
		html := page.String()
		rows := strings.Count(html, "</code></td><td>operator</td>") // the kind column of every image
		more := fmt.Sprintf("%d more are in <code>report.json</code>", n-TableRows)
		switch {
		case rows != TableRows:
			t.Errorf("%d images: %d image rows, want %d", n, rows, TableRows)
		case n > TableRows && strings.Count(html, more) != 2: // every image, repositories
			t.Errorf("%d images: the page does not say %q under both long tables", n, more)
		case n == TableRows && strings.Contains(html, "more are in"):
			t.Errorf("%d images: the page says rows are left out", n)
		}
	}
}
