package workspace

import (
	"path/filepath"
	"testing"
)

// The working directory's layout is a contract with users, scripts and older
// workspaces: these paths never change.
func TestLayout(t *testing.T) {
	d := At("/ws")
	f := Filtered("/ws/working-dir/operator-catalogs/x", "h")
	tests := []struct{ got, want string }{
		{d.Path(), "/ws/working-dir"},
		{d.Workspace(), "/ws"},
		{d.PlanPath(), "/ws/working-dir/plan.json"},
		{d.MappingPath(), "/ws/working-dir/mapping.txt"},
		{d.MissingPath(), "/ws/working-dir/missing.txt"},
		{d.ResultsPath(), "/ws/working-dir/results.json"},
		{d.ReportDataPath(), "/ws/working-dir/report.json"},
		{d.ReportHTMLPath(), "/ws/working-dir/report.html"},
		{d.ReportsDir(), "/ws/working-dir/reports"},
		{d.LockPath(), "/ws/working-dir/airlock.lock"},
		{d.Shard("shard-1-of-2").LockPath(), "/ws/working-dir/shards/shard-1-of-2/airlock.lock"},
		{d.DryRunMappingPath(), "/ws/working-dir/dry-run/mapping.txt"},
		{d.DryRunMissingPath(), "/ws/working-dir/dry-run/missing.txt"},
		{d.ClusterResourcesDir(), "/ws/working-dir/cluster-resources"},
		{d.Shard("shard-1-of-2").PlanPath(), "/ws/working-dir/shards/shard-1-of-2/plan.json"},
		{d.OperatorCatalogsDir(), "/ws/working-dir/operator-catalogs"},
		{d.ArchivedCatalogImageDir("abc"), "/ws/working-dir/archived-catalogs/abc/image"},
		{d.ArchiveStatePath(), "/ws/working-dir/archive-state.json"},
		{d.LoadedPath(), "/ws/working-dir/loaded.json"},
		{d.HistoryDir(), "/ws/working-dir/history"},
		{d.DeletePlanPath(), "/ws/working-dir/delete/delete-images.yaml"},
		{recordedPlanPath(d, "sha256:abc"), "/ws/working-dir/delete/plans/abc.yaml"},
		{f.ConfigsDir(), "/ws/working-dir/operator-catalogs/x/filtered/h/configs"},
		{f.ImageDir(), "/ws/working-dir/operator-catalogs/x/filtered/h/image"},
		{f.MemoPath(), "/ws/working-dir/operator-catalogs/x/filtered/h/catalog-memo.json"},
	}
	for _, tc := range tests {
		if tc.got != filepath.FromSlash(tc.want) {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
	if abs, err := Open("ws"); err != nil || !filepath.IsAbs(abs.Path()) || filepath.Base(abs.Path()) != WorkingDirName {
		t.Errorf("Open(ws) = %s, %v", abs, err)
	}
}
