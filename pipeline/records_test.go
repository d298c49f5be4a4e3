package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// The records of a run are written side by side, the report rendered with
// the run's error as it stands when they start: a record that cannot be
// written (here results.json, in the way of a folder) fails the run, and the
// report, rendered again, shows that error; the other records are written.
func TestFailedRecordIsInTheReport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	ws := t.TempDir()
	o := opts(e.config(t, "    - name: baz"))
	o.Workspace = location.File(ws)
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	wd := workspace.At(ws)
	if err := os.MkdirAll(filepath.Join(wd.ResultsPath(), "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.Mirror(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "results.json") {
		t.Fatalf("the run's error %v, want one naming results.json", err)
	}
	b, rerr := os.ReadFile(wd.ReportDataPath())
	if rerr != nil {
		t.Fatal(rerr)
	}
	var rep struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Error != err.Error() {
		t.Errorf("report.json's error %q, want the run's %q", rep.Error, err)
	}
	for _, p := range []string{wd.ReportHTMLPath(), wd.PlanPath(), wd.ClusterResourcesDir()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("not written beside the failed record: %v", err)
		}
	}
	if h, err := os.ReadDir(wd.HistoryDir()); err != nil || len(h) == 0 {
		t.Errorf("no history record written beside the failed record (%v)", err)
	}
}
