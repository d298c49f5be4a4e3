package workspace

import (
	"os"
	"path/filepath"
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
