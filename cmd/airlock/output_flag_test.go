package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOutputFlag: -o is a path in every command; a bare format name is read as
// --format (with a note) only where that cannot mean anything else, and is
// otherwise refused, pointing to --format and ./NAME: never a file or folder
// silently named after a format.
func TestOutputFlag(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(repo, "testdata", "demo", "catalog")
	isc := filepath.Join(repo, "prune", "testdata", "filter", "dependencies", "config.yaml")
	sample := filepath.Join(repo, "prune", "testdata", "filter", "_catalogs", "sample")
	tests := []struct {
		name   string
		exists string // a folder made first, in the test's folder
		args   []string
		err    string // the error wanted ("" none)
		note   string // on stderr
		stdout string // stdout starts with
		file   string // a file written, in the test's folder
	}{
		{name: "prune -o yaml", args: []string{"catalog", "prune", "-c", isc, "-o", "yaml", sample}, err: "-o yaml: -o is the folder the pruned catalog is written to; did you mean --format yaml? For one named yaml write -o ./yaml"},
		{name: "prune -o yaml, folder yaml exists", exists: "yaml", args: []string{"catalog", "prune", "-c", isc, "-o", "yaml", sample}, err: "did you mean --format yaml? (yaml exists)"},
		{name: "prune -o json --format yaml", args: []string{"catalog", "prune", "-c", isc, "-o", "json", "--format", "yaml", sample}, err: "did you mean a path?"},
		{name: "prune -o ./yaml", args: []string{"catalog", "prune", "-c", isc, "-o", "./yaml", sample}, file: "yaml/vault/catalog.json"},
		{name: "render -o yaml", args: []string{"catalog", "render", catalog, "-o", "yaml"}, note: "note: -o yaml is read as --format yaml", stdout: "---\n"},
		{name: "render -o yaml, folder yaml exists", exists: "yaml", args: []string{"catalog", "render", catalog, "-o", "yaml"}, err: "did you mean --format yaml? (yaml exists)"},
		{name: "render -o json --format yaml", args: []string{"catalog", "render", catalog, "-o", "json", "--format", "yaml"}, err: "-o json: -o is the file to write; did you mean a path?"},
		{name: "render -o out.yaml", args: []string{"catalog", "render", catalog, "--format", "yaml", "-o", "out.yaml"}, file: "out.yaml"},
		{name: "validate -o json", args: []string{"catalog", "validate", catalog, "-o", "json"}, note: "note: -o json is read as --format json", stdout: "{\n"},
		{name: "validate --format json -o r.json", args: []string{"catalog", "validate", catalog, "--format", "json", "-o", "r.json"}, note: "written to r.json", file: "r.json"},
		{name: "validate --format yaml", args: []string{"catalog", "validate", catalog, "--format", "yaml"}, err: `invalid --format "yaml": use text or json`},
		{name: "add -o yaml", args: []string{"catalog", "add", "--bundle", filepath.Join(repo, "fbc", "legacy", "testdata", "bundles", "demo-operator.v0.4.0"), "--channel", "stable", sample, "-o", "yaml"}, err: "-o yaml: -o is the folder the catalog is written to; did you mean --format yaml?"},
		{name: "graph -o svg", args: []string{"catalog", "graph", sample, "--package", "etcd", "-o", "svg"}, err: "-o svg: -o is the file to write (its extension gives the format); did you mean --format svg?"},
		{name: "graph -o etcd.mmd", args: []string{"catalog", "graph", sample, "--package", "etcd", "-o", "etcd.mmd"}, file: "etcd.mmd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if tc.exists != "" {
				if err := os.Mkdir(tc.exists, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, serr, err := runCmd(ctx, tc.args...)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("airlock %s: %v\n%s", strings.Join(tc.args, " "), err, serr)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("airlock %s: error %v, want one saying %q", strings.Join(tc.args, " "), err, tc.err)
			}
			if !strings.Contains(serr, tc.note) || !strings.HasPrefix(out, tc.stdout) {
				t.Errorf("airlock %s: stdout %.40q, stderr %q; want stdout starting %q, stderr saying %q", strings.Join(tc.args, " "), out, serr, tc.stdout, tc.note)
			}
			if tc.file != "" {
				if _, err := os.Stat(tc.file); err != nil {
					t.Errorf("airlock %s: %v", strings.Join(tc.args, " "), err)
				}
			}
			if tc.err != "" || tc.stdout != "" {
				for _, name := range []string{"json", "yaml", "text", "svg"} {
					if name != tc.exists && exists(name) {
						t.Errorf("airlock %s: %s was created", strings.Join(tc.args, " "), name)
					}
				}
			}
		})
	}
}
