package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/reporttest"
	"github.com/airlock-mirror/airlock/report"
)

// runScaleReport is the scale section's report row without the seeding and
// the mirroring (Config.ScaleReportOnly): for each size, the record of a
// run shaped like the section's (reporttest.ScaleShape: four catalogs
// heads only, a 160-component release, the images over their
// repositories) is written as report.html, as the pipeline writes it, and
// opened in headless Chromium as the section opens the real one.
func runScaleReport(ctx context.Context, cfg Config) ([]Row, error) {
	var rows []Row
	type size struct {
		n     int
		bytes int64
		open  time.Duration
	}
	var sizes []size
	for i, n := range cfg.ScaleSizes {
		run := reporttest.Run(reporttest.ScaleShape(n))
		images := len(run.Images)
		if i == 0 {
			rows = append(rows, heading(fmt.Sprintf("scale report: report.html of generated runs shaped like the scale section's (4 catalogs heads only, %d packages at %d images; a %d-component release), written as the pipeline writes it, opened in headless Chromium",
				reporttest.ScaleShape(n).Packages, images, reporttest.ScaleShape(n).ReleaseComponents)))
		}
		dir := filepath.Join(cfg.WorkDir, fmt.Sprintf("scale-report-%d", n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return rows, err
		}
		page := filepath.Join(dir, "report.html")
		t0 := time.Now()
		if err := report.Save(filepath.Join(dir, "report.json"), page, run); err != nil {
			return rows, err
		}
		write := time.Since(t0)
		input := fmt.Sprintf("generated run: %d images, %d packages, %d repositories", images, reporttest.ScaleShape(n).Packages, reporttest.ScaleShape(n).Repos)
		cfg.Log.Info("measuring", "what", "scale report: open report.html", "images", images)
		open, why := medianOpen(ctx, page, reportOpens)
		bytes := fileSize(page)
		row := Row{Name: "scale report: report.html opened in headless Chromium", Input: input, Wall: open,
			Note: fmt.Sprintf("report.html %s (%s per image), written in %s: from navigation to the end of the load event, a layout forced after it, median of %d opens", Bytes(bytes), Bytes(bytes/int64(images)), Seconds(write), reportOpens)}
		atSize(&row, n, "≤ 3 s", open > 0 && open <= 3*time.Second)
		if open == 0 {
			row.Met, row.Note = "", "not measured: "+why
		}
		rows = append(rows, row)
		sizes = append(sizes, size{images, bytes, open})
	}
	if len(sizes) > 1 {
		a, b := sizes[0], sizes[len(sizes)-1]
		k := float64(b.n) / float64(a.n)
		rows = append(rows, Row{Name: fmt.Sprintf("scale report: growth per image, %d → %d images", a.n, b.n),
			WallText: fmt.Sprintf("%.2f", float64(b.open)/float64(max(a.open, 1))/k),
			Note:     fmt.Sprintf("(1.00: linear) report.html bytes %.2f; opened in %s → %s", float64(b.bytes)/float64(max(a.bytes, 1))/k, Seconds(a.open), Seconds(b.open))})
	}
	return rows, nil
}

// reportOpens is how many times the report rows open each page: a loaded
// machine's browser timings vary twofold, their median less. (A variable:
// the harness's test opens each page once.)
var reportOpens = 5

// medianOpen opens page n times (reportOpen) and returns the median time;
// 0 and why when an open fails.
func medianOpen(ctx context.Context, page string, n int) (time.Duration, string) {
	var ds []time.Duration
	for range n {
		d, why := reportOpen(ctx, page)
		if d == 0 {
			return 0, why
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ""
}
