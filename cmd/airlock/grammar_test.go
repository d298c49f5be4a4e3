package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMirrorArgs(t *testing.T) {
	root := newRootCmd()
	tests := []struct{ in, want string }{
		{"-c isc.yaml file:///out --v2", "mirror -c isc.yaml file:///out --v2"},
		{"--v2 -c ./isc.yaml --from file:///out docker://reg", "mirror --v2 -c ./isc.yaml --from file:///out docker://reg"},
		{"--log-level debug --workspace file:///ws docker://reg", "mirror --log-level debug --workspace file:///ws docker://reg"},
		{"file:///out -c isc.yaml", "mirror file:///out -c isc.yaml"},
		{"--v2 list operators --catalog x:1", "--v2 list operators --catalog x:1"},
		{"delete --generate -c d.yaml docker://r", "delete --generate -c d.yaml docker://r"},
		{"mirror -c isc.yaml file:///out", "mirror -c isc.yaml file:///out"},
		{"--v2 --help", "--v2 --help"},
		{"-v", "-v"},
		{"", ""},
		{"nonsense", "nonsense"},
	}
	for _, tc := range tests {
		got := strings.Join(MirrorArgs(root, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("MirrorArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOCMirrorFlagErrors(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "working-dir"), 0o755)
	t.Setenv("OC_MIRROR_CACHE", "")
	os.Unsetenv("OC_MIRROR_CACHE")
	tests := []cmdErrorCase{
		{"--v1", []string{"--v1", "-c", "isc.yaml", "file:///x"}, "airlock has no oc-mirror v1 engine"},
		{"--since not a date", []string{"mirror", "-c", "isc.yaml", "--since", "June", "file:///x"}, `--since "June": want a date YYYY-MM-DD`},
		{"--since mirror-to-mirror", []string{"mirror", "-c", "../../testdata/demo/imageset.yaml", "--since", "2024-06-01", "--workspace", dir, "docker://127.0.0.1:1/ns"}, "--since, --since-archive and --full apply to mirror-to-disk only"},
		{"--workspace docker://", []string{"mirror", "-c", "../../testdata/demo/imageset.yaml", "--workspace", "docker://x/y", "docker://127.0.0.1:1/ns"}, `--workspace "docker://x/y" must be file://DIR or DIR`},
		{"list --catalogs", []string{"list", "operators", "--catalogs", "--version=4.18"}, "name one with --catalog"},
		{"list without --catalog", []string{"list", "operators"}, `required flag(s) "catalog" not set`},
		{"list tagless catalog", []string{"list", "operators", "--catalog", "127.0.0.1:1/ns/index"}, "has neither a tag nor a digest; add one"},
		{"--delete-id bad", []string{"delete", "--generate", "--stale", "--delete-id", "../x", "--workspace", "file://" + dir, "docker://127.0.0.1:1/ns"}, `--delete-id "../x": use letters`},
		{"delete two destinations", []string{"delete", "--delete-yaml-file", "p.yaml", "docker://a/b", "docker://c/d"}, "one destination expected, 2 given"},
		{"prune -o yaml", []string{"catalog", "prune", "-c", "isc.yaml", "-o", "yaml", "./catalog"}, "did you mean --format yaml?"},
		{"report twice", []string{"report", "--workspace", dir, dir}, "give the folder once"},
		{"report of nothing", []string{"report"}, "which run?"},
		{"report docker://", []string{"report", "docker://x/y"}, `report folder "docker://x/y" must be file://DIR or DIR`},
		{"no destination", []string{"mirror", "-c", "isc.yaml"}, "no destination given: name the registry (or, for mirror, the archive folder), e.g.\n  airlock mirror -c isc.yaml docker://"},
		{"url credentials", []string{"mirror", "-c", "../../testdata/demo/imageset.yaml", "--workspace", dir, "docker://alice:hunter2@127.0.0.1:1/ns"}, "docker://***@127.0.0.1:1/ns: credentials in a reference are not supported"},
	}
	checkCmdErrors(t, tests)

	t.Setenv("OC_MIRROR_CACHE", dir)
	checkCmdErrors(t, []cmdErrorCase{
		{"--cache-dir and OC_MIRROR_CACHE", []string{"mirror", "-c", "isc.yaml", "--cache-dir", dir, "file:///x"}, "are both set: give one"},
	})
}

// TestOCMirrorNotes: an accepted flag that cannot apply prints its note once.
func TestOCMirrorNotes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tests := []struct {
		args []string
		note string
	}{
		{[]string{"mirror", "-c", "missing.yaml", "-p", "55000", "--rootless-storage-path", "/x", "file:///nowhere"}, "note: --port has no effect: airlock needs no local cache registry"},
		{[]string{"mirror", "-c", "missing.yaml", "--dry-run-manifest-lists", "file:///nowhere"}, "note: --dry-run-manifest-lists has no effect"},
		{[]string{"delete", "--delete-yaml-file", "missing.yaml", "--force-cache-delete", "true", "docker://127.0.0.1:1/ns"}, "note: --force-cache-delete has no effect"},
		{[]string{"delete", "--delete-yaml-file", "missing.yaml", "--delete-v1-images", "docker://127.0.0.1:1/ns"}, "note: --delete-v1-images has no effect"},
		{[]string{"delete", "--delete-yaml-file", "missing.yaml", "--delete-signatures", "docker://127.0.0.1:1/ns"}, "note: --delete-signatures has no effect"},
	}
	for _, tc := range tests {
		_, serr, _ := runCmd(ctx, tc.args...)
		if strings.Count(serr, tc.note) != 1 {
			t.Errorf("airlock %s: stderr %q, want the note %q once", strings.Join(tc.args, " "), serr, tc.note)
		}
	}
	out, _, err := runCmd(ctx, "--version")
	if err != nil || !strings.HasPrefix(out, "airlock ") {
		t.Errorf("--version: %q, %v", out, err)
	}
}

func TestParseSince(t *testing.T) {
	for in, want := range map[string]string{
		"2024-06-01":           "2024-06-01T00:00:00Z",
		"2024-06-01T10:00:00Z": "2024-06-01T10:00:00Z",
	} {
		got, err := parseSince(in)
		if err != nil || got.UTC().Format(time.RFC3339) != want {
			t.Errorf("parseSince(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "01/06/2024", "2024-13-01"} {
		if _, err := parseSince(bad); err == nil {
			t.Errorf("parseSince(%q) accepted", bad)
		}
	}
}

// TestOneGrammar checks the grammar against the demo registries: --workspace
// file://DIR is a workspace for the catalog commands (no folder named file:),
// -o is a path and --format the format, report takes file://DIR, credentials in
// a destination are refused and written nowhere.
func TestOneGrammar(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two registries")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tmp, src, dst := demoRegistries(ctx, t, repo)
	catalog := src.Host() + "/airlock-demo/demo-index:v1"
	run := func(args ...string) (string, string) {
		t.Helper()
		out, serr, err := runCmd(ctx, args...)
		if err != nil {
			t.Fatalf("airlock %s: %v\n%s", strings.Join(args, " "), err, serr)
		}
		return out, serr
	}
	run("list", "operators", "--catalog", catalog, "--workspace", "file://"+filepath.Join(tmp, "lw"))
	run("catalog", "graph", catalog, "--package", "demo-operator", "--workspace", "file://"+filepath.Join(tmp, "gw"), "-o", "g.dot")
	run("catalog", "render", catalog, "--workspace", filepath.Join(tmp, "rw"), "--format", "yaml", "-o", "out.yaml")
	for _, ws := range []string{"lw", "gw", "rw"} {
		if _, err := os.Stat(filepath.Join(tmp, ws, "working-dir", "operator-catalogs")); err != nil {
			t.Errorf("--workspace %s: %v", ws, err)
		}
	}
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "file:") {
			t.Errorf("a folder named %q was created", e.Name())
		}
	}
	if b, err := os.ReadFile(filepath.Join(tmp, "out.yaml")); err != nil || !strings.HasPrefix(string(b), "---\n") {
		t.Errorf("render -o out.yaml --format yaml: %.40q, %v", b, err)
	}
	out, serr := run("catalog", "render", catalog, "-o", "yaml")
	if !strings.HasPrefix(out, "---\n") || !strings.Contains(serr, "note: -o yaml is read as --format yaml") {
		t.Errorf("render -o yaml: stdout %.40q, stderr %q", out, serr)
	}

	// A missing tag names the tags there are.
	_, _, err = runCmd(ctx, "list", "operators", "--catalog", src.Host()+"/airlock-demo/demo-index:v9")
	if err == nil || !strings.Contains(err.Error(), "demo-index has no tag v9; its tags: v1") || strings.Contains(err.Error(), "MANIFEST_UNKNOWN") {
		t.Errorf("missing tag: %v", err)
	}

	// A mirror run, then its report by file://, DIR and --workspace; the next:
	// line of a mirror-to-disk is pasteable.
	ws := filepath.Join(tmp, "ws")
	run("mirror", "-c", "isc.yaml", "--workspace", ws, "docker://"+dst.Host()+"/ns")
	for _, args := range [][]string{{"report", "file://" + ws}, {"report", ws}, {"report", "--workspace", "file://" + ws}} {
		if out, _ := run(args...); !strings.Contains(out, filepath.Join(ws, "working-dir")) {
			t.Errorf("airlock %s: %q", strings.Join(args, " "), out)
		}
	}
	_, serr = run("-c", "isc.yaml", "file://"+filepath.Join(tmp, "target"))
	next := ""
	for _, l := range strings.Split(serr, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "airlock mirror -c ") {
			next = strings.TrimSpace(l)
		}
	}
	want := "airlock mirror -c " + filepath.Join(tmp, "isc.yaml") + " --from file://" + filepath.Join(tmp, "target", "batch-0001") + " docker://REGISTRY/NAMESPACE"
	if next != want {
		t.Fatalf("next: %q, want %q\n%s", next, want, serr)
	}
	// Pasted, with the registry filled in, it loads the batch.
	args := strings.Fields(strings.Replace(strings.TrimPrefix(next, "airlock "), "REGISTRY/NAMESPACE", dst.Host()+"/pasted", 1))
	run(append(args, "--workspace", filepath.Join(tmp, "pasted"))...)

	// Credentials in the destination: refused, and written nowhere.
	cws := filepath.Join(tmp, "cws")
	_, serr, err = runCmd(ctx, "mirror", "-c", "isc.yaml", "--workspace", cws, "docker://alice:pw-7e1f@"+dst.Host()+"/ns")
	if err == nil || strings.Contains(err.Error()+serr, "pw-7e1f") {
		t.Fatalf("credentials in the destination: %v\n%s", err, serr)
	}
	filepath.Walk(tmp, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && !slices.Contains([]string{"src", "dst"}, strings.Split(strings.TrimPrefix(p, tmp+"/"), "/")[0]) {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "pw-7e1f") {
				t.Errorf("%s holds the password", p)
			}
		}
		return nil
	})
}
