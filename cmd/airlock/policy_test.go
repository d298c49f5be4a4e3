package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyFlags: --policy and --secure-policy are refused
// where they cannot apply, and a policy file that cannot be used is named
// before anything runs.
func TestPolicyFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "isc.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: 127.0.0.1:1/a/b:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"default":[{"type":"reject"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := "file://" + filepath.Join(dir, "ws")
	missing := filepath.Join(dir, "nope.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"disk-to-mirror", []string{"-c", cfg, "--from", "file://" + dir, "--policy", policy, "docker://127.0.0.1:1/ns"}, "not in disk-to-mirror (--from: use --archive-key)"},
		{"a shard of a plan", []string{"-c", cfg, "--plan", filepath.Join(dir, "plan.json"), "--shard", "0/2", "--policy", policy, "docker://127.0.0.1:1/ns"}, "nor in a --plan run"},
		{"a missing policy", []string{"-c", cfg, "--workspace", ws, "--policy", missing, "docker://127.0.0.1:1/ns"}, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCmd(context.Background(), append([]string{"mirror"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
	// --registries.d alone (oc-mirror command lines give it to copy sigstore
	// attachments): accepted, with a note.
	_, stderr, _ := runCmd(context.Background(), "mirror", "-c", cfg, "--workspace", ws, "--registries.d", dir, "docker://127.0.0.1:1/ns")
	if !strings.Contains(stderr, "--registries.d is read by --policy and --secure-policy only") {
		t.Errorf("--registries.d alone: no note on stderr:\n%s", stderr)
	}
}
