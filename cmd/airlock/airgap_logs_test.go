package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAirGapRunLogs: every kind of run that uses a workspace writes its own
// log file in that workspace's working-dir/logs: mirror-to-disk and its dry
// run (in the target), disk-to-mirror and its dry run, delete --generate,
// list operators and catalog render with --workspace (in the far side's
// workspace; Debian's docker-registry as the mirror). A password written into
// a reference never lands in a log.
func TestAirGapRunLogs(t *testing.T) {
	g := startAirGap(t)
	target := filepath.Join(g.tmp, "target")
	far := filepath.Join(g.tmp, "far")
	logs := func(ws string) []string {
		t.Helper()
		l, _ := filepath.Glob(filepath.Join(ws, "working-dir", "logs", "airlock-*.log"))
		return l
	}
	// step runs args, which may fail (want says so), and checks that it added
	// one log to ws whose first line names the command.
	step := func(ws, first string, fails bool, args ...string) {
		t.Helper()
		before := len(logs(ws))
		_, serr, err := g.run(args...)
		if (err != nil) != fails {
			t.Fatalf("airlock %s: %v\n%s", strings.Join(args, " "), err, serr)
		}
		if n := len(logs(ws)); n != before+1 {
			t.Fatalf("airlock %s: %d run logs in %s, want %d", strings.Join(args, " "), n, ws, before+1)
		}
		if log := g.runLog(t, ws); !strings.Contains(strings.SplitN(log, "\n", 2)[0], first) {
			t.Errorf("airlock %s: the log's first line does not name %q:\n%s", strings.Join(args, " "), first, log)
		}
	}
	step(target, `msg="airlock run" workflow=mirror-to-disk`, false, "mirror", "-c", "isc.yaml", "file://"+target)
	step(target, `msg="airlock run" workflow=mirror-to-disk`, false, "mirror", "-c", "isc.yaml", "--dry-run", "file://"+target)
	from := []string{"mirror", "-c", "isc.yaml", "--from", "file://" + filepath.Join(target, "batch-0001"), "--workspace", "file://" + far, "--dest-tls-verify=false"}
	step(far, `msg="airlock run" workflow=disk-to-mirror`, false, append(from, "--dry-run", "docker://"+g.mirror.Host+"/airgap")...)
	step(far, `msg="airlock run" workflow=disk-to-mirror`, false, append(from, "docker://"+g.mirror.Host+"/airgap")...)
	step(far, `msg="airlock delete"`, false, "delete", "--generate", "-c", "delete-isc.yaml", "--workspace", "file://"+far, "--dest-tls-verify=false", "docker://"+g.mirror.Host+"/airgap")
	catalog := g.src + "/airlock-demo/demo-index:v1"
	step(far, `msg="airlock list operators"`, false, "list", "operators", "--catalog", catalog, "--workspace", "file://"+far, "--src-tls-verify=false")
	step(far, `msg="airlock catalog render"`, false, "catalog", "render", "docker://"+catalog, "--workspace", far, "--src-tls-verify=false", "-o", filepath.Join(g.tmp, "catalog.json"))
	// A password in a reference: the command may fail, its log hides it.
	step(far, `msg="airlock list operators"`, true, "list", "operators", "--catalog", "docker://alice:pw-in-a-reference@127.0.0.1:1/ns/index:v1", "--workspace", far, "--src-tls-verify=false")
	for _, ws := range []string{target, far} {
		for _, l := range logs(ws) {
			b, err := os.ReadFile(l)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "pw-in-a-reference") {
				t.Errorf("%s holds the password:\n%s", l, b)
			}
		}
	}
}
