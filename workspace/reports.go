package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// KeepReports is how many runs' reports a working directory keeps in
// ReportsDir: naming a new run's report removes the oldest beyond it (its
// .json and .html). report.html and report.json, the last run's, are apart
// and stay.
const KeepReports = 20

// RunReport names the report files of a new run: reports/report-NNNNNN.json
// and .html, numbered one past the highest there, and removes the reports of
// the runs before the newest KeepReports (the new one counted). The run holds
// the working directory's lock, so no other run takes the same number.
func (d Dir) RunReport() (data, html string, err error) {
	entries, err := os.ReadDir(d.ReportsDir())
	if err != nil && !os.IsNotExist(err) {
		return "", "", err
	}
	n := 0
	numbered := map[string]int{}
	for _, e := range entries {
		if m := reportName.FindStringSubmatch(e.Name()); m != nil && e.Type().IsRegular() {
			k, _ := strconv.Atoi(m[1])
			numbered[e.Name()] = k
			n = max(n, k)
		}
	}
	if err := os.MkdirAll(d.ReportsDir(), 0o755); err != nil {
		return "", "", err
	}
	// The new run is n+1: keep n+1-KeepReports+1 … n+1. Numbers only grow, so
	// the highest (and the next one) survive pruning.
	for name, k := range numbered {
		if k <= n+1-KeepReports {
			if err := os.Remove(filepath.Join(d.ReportsDir(), name)); err != nil && !os.IsNotExist(err) {
				return "", "", fmt.Errorf("remove an old run report: %w", err)
			}
		}
	}
	base := filepath.Join(d.ReportsDir(), fmt.Sprintf("report-%06d", n+1))
	return base + ".json", base + ".html", nil
}

var reportName = regexp.MustCompile(`^report-([0-9]{6,})\.(json|html)$`)
