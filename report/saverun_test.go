package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SaveRun always keeps the run's own report; it replaces the last report
// unless the run was refused and the last one was not.
func TestSaveRun(t *testing.T) {
	tests := []struct {
		name         string
		last         *Run // nil: no last report yet
		run          Run
		replacesLast bool
	}{
		{"first run", nil, Run{Workflow: "mirror-to-mirror"}, true},
		{"first run, refused", nil, Run{Workflow: "disk-to-mirror", Error: "refused", Refused: true}, true},
		{"after a good run", &Run{Workflow: "mirror-to-mirror"}, Run{Workflow: "mirror-to-mirror", Error: "2 images failed"}, true},
		{"refused after a good run", &Run{Workflow: "disk-to-mirror"}, Run{Workflow: "disk-to-mirror", Error: "archive ID", Refused: true}, false},
		{"refused after a refused run", &Run{Workflow: "disk-to-mirror", Error: "old", Refused: true}, Run{Workflow: "disk-to-mirror", Error: "new", Refused: true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			own := Files{Data: filepath.Join(dir, "reports", "report-000002.json"), HTML: filepath.Join(dir, "reports", "report-000002.html")}
			last := Files{Data: filepath.Join(dir, "report.json"), HTML: filepath.Join(dir, "report.html")}
			if err := os.MkdirAll(filepath.Dir(own.Data), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.last != nil {
				if err := SaveAll(tc.last, last); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(last.HTML)
			if err := SaveRun(&tc.run, own, last); err != nil {
				t.Fatal(err)
			}
			mine, err := os.ReadFile(own.HTML)
			if err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(last.HTML)
			if err != nil {
				t.Fatal(err)
			}
			if replaced := string(after) == string(mine) && string(after) != string(before); replaced != tc.replacesLast {
				t.Errorf("report.html replaced: %v, want %v", replaced, tc.replacesLast)
			}
			if tc.run.Refused && !strings.Contains(string(mine), "was refused before it planned anything") {
				t.Error("a refused run's page does not say so")
			}
			if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(leftovers) > 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}
