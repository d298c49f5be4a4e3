package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// RunReport names the report files of a new run: reports/report-NNNNNN.json
// and .html, numbered one past the highest there. The run holds the working
// directory's lock, so no other run takes the same number.
func (d Dir) RunReport() (data, html string, err error) {
	entries, err := os.ReadDir(d.ReportsDir())
	if err != nil && !os.IsNotExist(err) {
		return "", "", err
	}
	n := 0
	for _, e := range entries {
		if m := reportName.FindStringSubmatch(e.Name()); m != nil {
			if k, _ := strconv.Atoi(m[1]); k > n {
				n = k
			}
		}
	}
	if err := os.MkdirAll(d.ReportsDir(), 0o755); err != nil {
		return "", "", err
	}
	base := filepath.Join(d.ReportsDir(), fmt.Sprintf("report-%06d", n+1))
	return base + ".json", base + ".html", nil
}

var reportName = regexp.MustCompile(`^report-([0-9]{6,})\.(json|html)$`)
