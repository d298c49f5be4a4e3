package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRunReportNumbers(t *testing.T) {
	d := At(t.TempDir())
	data, html, err := d.RunReport()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(d.Path(), "reports", "report-000001"); data != want+".json" || html != want+".html" {
		t.Errorf("first report %s, %s", data, html)
	}
	for _, name := range []string{"report-000007.json", "report-000003.html", "report-x.html", "notes.txt", "report-1234567.tmp"} {
		if err := os.WriteFile(filepath.Join(d.ReportsDir(), name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, html, err := d.RunReport(); err != nil || html != filepath.Join(d.ReportsDir(), "report-000008.html") {
		t.Errorf("after report-000007: %s, %v", html, err)
	}
}

// TestRunReportKeepsTheNewest writes the reports of many runs, as runs do
// (each names its files, then writes them), and checks that the folder keeps
// the newest KeepReports runs, both files of each, numbering on, and leaves
// other files alone.
func TestRunReportKeepsTheNewest(t *testing.T) {
	for _, runs := range []int{1, KeepReports - 1, KeepReports, KeepReports + 1, 3*KeepReports + 5} {
		d := At(t.TempDir())
		if err := os.MkdirAll(d.ReportsDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(d.ReportsDir(), "notes.txt")
		if err := os.WriteFile(other, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for range runs {
			data, html, err := d.RunReport()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{data, html} {
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := filepath.Glob(filepath.Join(d.ReportsDir(), "report-*"))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for k := max(1, runs-KeepReports+1); k <= runs; k++ {
			base := filepath.Join(d.ReportsDir(), fmt.Sprintf("report-%06d", k))
			want = append(want, base+".html", base+".json")
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%d runs: kept %d files %v, want %d (runs %d to %d)", runs, len(got), got, len(want), max(1, runs-KeepReports+1), runs)
		}
		if _, err := os.Stat(other); err != nil {
			t.Errorf("%d runs: a file that is no report was removed: %v", runs, err)
		}
	}
}
