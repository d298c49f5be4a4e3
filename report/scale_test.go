package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/browser"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/internal/testutil/reporttest"
	"github.com/airlock-mirror/airlock/prune"
	"github.com/airlock-mirror/airlock/report"
)

// page writes the page of run.
func page(t testing.TB, r *report.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.Write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dataRows returns the rows of every data block of the page, by table.
func dataRows(t testing.TB, html string) map[string][]json.RawMessage {
	t.Helper()
	out := map[string][]json.RawMessage{}
	for _, m := range regexp.MustCompile(`<script type="application/json" id="([^"]+)-rows">([^<]*)</script>`).FindAllStringSubmatch(html, -1) {
		var rows []json.RawMessage
		if err := json.Unmarshal([]byte(m[2]), &rows); err != nil {
			t.Fatalf("data block %s: %v", m[1], err)
		}
		out[m[1]] = rows
	}
	return out
}

// TestScalePageGolden: the page of a small run shaped like the bench's
// scale workload (two catalogs heads only, a release, more images and
// repositories than a table's first page, too many packages to draw), as a
// golden file.
func TestScalePageGolden(t *testing.T) {
	r := reporttest.Run(reporttest.Shape{Images: 230, Catalogs: 2, Packages: 82, Repos: 120, ReleaseComponents: 3, FailEvery: 40})
	// A package with a section of its own: a graph, five bundles kept,
	// a dropped channel; another added as a dependency.
	p := r.Catalogs[0].Packages[1]
	p.Graph = `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><g class="node"><text>v1</text></g></svg>`
	for v := 3; v <= 6; v++ {
		p.Bundles = append(p.Bundles, prune.BundleExplanation{Name: fmt.Sprintf("%s.v1.0.%d", p.Name, v), Version: fmt.Sprintf("1.0.%d", v),
			Reasons: []prune.Reason{{Kind: prune.ReasonRequested, Channel: "stable", Detail: "in range >=1.0.2"}}})
	}
	p.Dropped = []prune.DroppedChannel{{Name: "alpha", Reason: "no bundle in range"}}
	r.Catalogs[1].Packages[0].Dependency = true
	golden.Check(t, filepath.Join("testdata", "scale-230.html"), []byte(page(t, r)))
}

// TestPageHoldsEveryRowLaysOutOnePage: at any size the page lays out the
// first TableRows rows of each long table and holds every row as data
// beside it: every image, every repository, every package of each catalog,
// every failure.
func TestPageHoldsEveryRowLaysOutOnePage(t *testing.T) {
	for _, n := range []int{report.TableRows - 20, 5000} {
		s := reporttest.ScaleShape(n)
		if n <= report.TableRows {
			s.ReleaseComponents = 0
		}
		r := reporttest.Run(s)
		html := page(t, r)
		laidOut := strings.Count(html, "</code></td><td>operator</td>") // the kind column of every image row
		data := dataRows(t, html)
		wantLaidOut := min(n, report.TableRows) // the release's rows sort last
		if laidOut != wantLaidOut {
			t.Errorf("%d images: %d image rows laid out, want %d", n, laidOut, wantLaidOut)
		}
		if n <= report.TableRows {
			if len(data) != 0 || strings.Contains(html, "more are in") {
				t.Errorf("%d images: a page whose tables fit holds data blocks %v or says rows are left out", n, len(data))
			}
			continue
		}
		failed := 0
		for _, im := range r.Images {
			if im.Failed() {
				failed++
			}
		}
		for id, want := range map[string]int{"t-images": len(r.Images), "t-repositories": s.Repos + 1, "t-catalog-0": s.Packages / s.Catalogs} {
			if got := len(data[id]); got != want {
				t.Errorf("%d images: table %s holds %d rows, want %d", n, id, got, want)
			}
		}
		if _, ok := data["t-failures"]; ok != (failed > report.TableRows) {
			t.Errorf("%d images, %d failed: the failures table has a data block (%v) though it fits", n, failed, ok)
		}
		if more := fmt.Sprintf("The first %d images are shown; %d more are in <code>report.json</code>", report.TableRows, len(r.Images)-report.TableRows); !strings.Contains(html, more) {
			t.Errorf("%d images: the page does not say %q", n, more)
		}
	}
}

// TestPageSizePerImageIsFlat: the page holds every row, so its size grows
// with the run, but no faster: bytes per image at 20,000 images at most
// those at 2,000 (the parts that do not grow with the run make the smaller
// page's share larger).
func TestPageSizePerImageIsFlat(t *testing.T) {
	per := func(n int) float64 {
		r := reporttest.Run(reporttest.ScaleShape(n))
		return float64(len(page(t, r))) / float64(len(r.Images))
	}
	small, big := per(2000), per(20000)
	t.Logf("report.html: %.0f bytes per image at 2,000 images, %.0f at 20,000", small, big)
	if big > small {
		t.Errorf("report.html grows faster than the images: %.0f bytes per image at 2,000 images, %.0f at 20,000", small, big)
	}
}

// TestScalePageInBrowser opens the page of a 20,000-image run shaped like
// the bench's scale workload in headless Chromium: no console error, no
// network request; the browser lays out one page of each long table; the
// pager shows the next page and finds rows by search among every image.
// How long it takes to open is measured by the bench (airlock-bench -scale
// 1000,5000,20000 -scale-report-only), never asserted here: a loaded
// machine's browser timings vary twofold and more.
func TestScalePageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 images: -short")
	}
	bin := browser.Find()
	if bin == "" {
		t.Skip("no chromium (apt-get install chromium)")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	r := reporttest.Run(reporttest.ScaleShape(20000))
	if err := report.Save(filepath.Join(dir, "report.json"), p, r); err != nil {
		t.Fatal(err)
	}
	want := 0 // images whose source names repository 42
	for _, im := range r.Images {
		if strings.Contains(im.Source, "/repo-00042@") {
			want++
		}
	}
	// [rows laid out at load, image rows after "next", its status line,
	// image rows found by a search, its status line, first row found]
	eval := `(async () => {
		const bar = document.querySelector("div.pager[data-for='t-images']"), body = document.getElementById("t-images").tBodies[0];
		const loaded = document.querySelectorAll("tr").length;
		bar.querySelector("[data-step='1']").click();
		const next = [body.rows.length, bar.querySelector("span").textContent];
		const search = bar.querySelector("input");
		search.value = "/repo-00042@";
		search.dispatchEvent(new Event("input"));
		await new Promise((ok) => setTimeout(ok, 400));
		return [loaded, ...next, body.rows.length, bar.querySelector("span").textContent, body.rows[0].cells[0].textContent];
	})()`
	res, err := browser.Open(context.Background(), bin, p, browser.Options{Eval: eval})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 || len(res.Requests) > 0 {
		t.Errorf("errors %q, requests %q", res.Errors, res.Requests)
	}
	var v []any
	if err := json.Unmarshal(res.Value, &v); err != nil || len(v) != 6 {
		t.Fatalf("evaluated %s: %v", res.Value, err)
	}
	// Failures, 4 catalogs' packages, repositories, every image: a page
	// each; stages and the rest a few dozen.
	if loaded := int(v[0].(float64)); loaded > 7*(report.TableRows+1)+50 {
		t.Errorf("the browser laid out %d table rows at load: the long tables show one page each", loaded)
	}
	if int(v[1].(float64)) != report.TableRows || v[2] != fmt.Sprintf("rows 101–200 of %s", commas(len(r.Images))) {
		t.Errorf("after next: %v rows, status %q", v[1], v[2])
	}
	if int(v[3].(float64)) != want || v[4] != fmt.Sprintf("rows 1–%d of %d matching, of %s", want, want, commas(len(r.Images))) ||
		!strings.Contains(v[5].(string), "/repo-00042@") {
		t.Errorf("search for repository 42: %v rows (want %d), status %q, first row %q", v[3], want, v[4], v[5])
	}
}

func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestPageWithoutScriptsSaysWhereTheRestIs: the page's long tables read
// without scripts: the pager is hidden until the script shows it, and the
// line under a table says how many more rows report.json holds.
func TestPageWithoutScriptsSaysWhereTheRestIs(t *testing.T) {
	s := reporttest.ScaleShape(1000)
	html := page(t, reporttest.Run(s))
	for _, want := range []string{`<div class="pager" data-for="t-images" hidden>`,
		fmt.Sprintf(`<p class="muted more">The first %d repositories are shown; %d more are in <code>report.json</code> beside this page`, report.TableRows, s.Repos+1-report.TableRows)} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
