package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDeleteCommandErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "working-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []cmdErrorCase{
		{"no destination", []string{"delete", "--generate", "--stale"}, "no destination given"},
		{"nothing to do", []string{"delete", "docker://127.0.0.1:1/ns"}, "nothing to do"},
		{"generate without workspace", []string{"delete", "--generate", "--stale", "docker://127.0.0.1:1/ns"}, "needs --workspace"},
		{"generate without what", []string{"delete", "--generate", "--workspace", "file://" + dir, "docker://127.0.0.1:1/ns"}, "needs -c delete-isc.yaml (a DeleteImageSetConfiguration) or --stale"},
		{"stale and config", []string{"delete", "--generate", "--stale", "-c", "x.yaml", "--workspace", "file://" + dir, "docker://127.0.0.1:1/ns"}, "give one of them"},
		{"no mirror run there", []string{"delete", "--generate", "--stale", "--workspace", "file://" + dir, "docker://127.0.0.1:1/ns"}, "no mirror run"},
		{"file destination", []string{"delete", "--generate", "--stale", "--workspace", "file://" + dir, "file://" + dir}, "must be docker://"},
		{"generate and execute", []string{"delete", "--generate", "--delete-yaml-file", "p.yaml", "docker://127.0.0.1:1/ns"}, "give one of them"},
		{"execute with stale", []string{"delete", "--stale", "--delete-yaml-file", "p.yaml", "docker://127.0.0.1:1/ns"}, "use them with --generate"},
		{"plan outside a workspace", []string{"delete", "--delete-yaml-file", filepath.Join(dir, "p.yaml"), "docker://127.0.0.1:1/ns"}, "not inside a workspace"},
		{"history without workspace", []string{"history"}, `required flag(s) "workspace" not set`},
		{"history of nothing", []string{"history", "--workspace", "file://" + filepath.Join(dir, "none")}, "no workspace at"},
		{"gc without root", []string{"registry", "gc"}, `required flag(s) "root" not set`},
		{"gc of a folder that is no registry", []string{"registry", "gc", "--root", dir}, "holds no registry storage"},
	}
	checkCmdErrors(t, tests)
}

// TestMonthlyScript runs scripts/monthly.sh (the README's monthly routine) with
// this test binary standing in for airlock.
func TestMonthlyScript(t *testing.T) {
	// Processes only, like TestDemoScript.
	t.Parallel()
	if testing.Short() {
		t.Skip("runs two registries and three mirror runs")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "../../scripts/monthly.sh")
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_RUN_MAIN=1", "AIRLOCK="+self, "WORK="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("monthly.sh failed: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"run 3 ", "8 new at the destination",
		"24 manifest(s) to delete in 8 repositories (10 tags); 1 kept",
		"still wanted by run 3 as bundle beta.v2.2.0",
		"delete plan refused", "(foreign registry)", "(exit 3)",
		"deleted 24 manifest(s) and 10 tag(s)",
		"would free 56.5 KiB in 67 unreferenced blobs", "freed 56.5 KiB in 67 unreferenced blobs",
		`"tags":["v1","v3"]`, `"tags":["2.0"]`,
		"0 manifest(s) to delete",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("monthly.sh output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}
