package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// docRow is one row of docs/from-oc-mirror.md's table of oc-mirror command
// lines: the line, and what airlock does with it.
type docRow struct {
	line    int
	command string // as oc-mirror's documentation writes it
	refused string // "" for runs, else the text the error must contain
}

var (
	rowRE     = regexp.MustCompile("^\\| `(oc-mirror [^`]+)` \\| [^|]+ \\| (runs|refused: `([^`]+)`)")
	refusedRE = regexp.MustCompile("^\\| `oc-mirror [^`]+` \\| [^|]+ \\| refused")
)

// docTableHeading starts the section of docs/from-oc-mirror.md the test runs.
const docTableHeading = "## oc-mirror's command lines, run unchanged"

// readDocRows reads the command-line table of docs/from-oc-mirror.md.
func readDocRows(t *testing.T, path string) []docRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []docRow
	sc := bufio.NewScanner(f)
	in := false
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if strings.HasPrefix(text, "## ") {
			in = text == docTableHeading
		}
		if !in || !strings.HasPrefix(text, "| `oc-mirror ") {
			continue
		}
		m := rowRE.FindStringSubmatch(text)
		if m == nil {
			if refusedRE.MatchString(text) {
				t.Fatalf("%s:%d: a refused row must quote the error text: refused: `TEXT`", path, n)
			}
			t.Fatalf("%s:%d: row does not say runs or refused: `TEXT`: %s", path, n, text)
		}
		rows = append(rows, docRow{line: n, command: m[1], refused: m[3]})
	}
	if len(rows) < 20 {
		t.Fatalf("%s: only %d oc-mirror command lines found", path, len(rows))
	}
	return rows
}

// TestOCMirrorCommandLines runs oc-mirror v2's documented command lines, as
// docs/from-oc-mirror.md lists them, against two demo registries: each must do
// what the table says.
func TestOCMirrorCommandLines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two registries and about twenty mirror, delete and list commands")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rows := readDocRows(t, filepath.Join(repo, "docs", "from-oc-mirror.md"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmp, src, dst := demoRegistries(ctx, t, repo)
	t.Setenv("UPDATE_URL_OVERRIDE", cincinnatitest.New(t).URL) // list releases asks a local update service
	home := filepath.Join(tmp, "home", "user")
	places := strings.NewReplacer(
		"<previously-mirrored-work-folder>", filepath.Join(home, "oc-mirror", "workspace", "working-dir"),
		"/home/<user>/", home+"/",
		"/home/user/", home+"/",
		"/custom/cache", filepath.Join(tmp, "custom", "cache"),
		"registry.redhat.io/redhat/redhat-operator-index:v4.18", src.Host()+"/airlock-demo/demo-index:v1",
		"aws-load-balancer-operator", "demo-operator",
		"stable-v1", "stable",
		"registry.example.com", dst.Host(),
		"localhost:6000", dst.Host(),
		"enterprise-registry.in", dst.Host(),
		"<remote-registry>", dst.Host(),
	)
	for _, row := range rows {
		args := strings.Fields(places.Replace(row.command))[1:]
		out, serr, err := runCmd(ctx, args...)
		switch {
		case row.refused == "" && err != nil:
			t.Fatalf("docs/from-oc-mirror.md:%d: %s\nairlock %s\nfailed: %v\n%s%s", row.line, row.command, strings.Join(args, " "), err, out, serr)
		case row.refused != "" && err == nil:
			t.Fatalf("docs/from-oc-mirror.md:%d: %s ran, the table says it is refused with %q\n%s%s", row.line, row.command, row.refused, out, serr)
		case row.refused != "" && !strings.Contains(err.Error(), row.refused):
			t.Fatalf("docs/from-oc-mirror.md:%d: %s: error %q does not say %q", row.line, row.command, err, row.refused)
		}
		if strings.Contains(serr, "unknown flag") || strings.Contains(serr, "panic") {
			t.Fatalf("docs/from-oc-mirror.md:%d: %s:\n%s", row.line, row.command, serr)
		}
	}
	// What the table says the lines wrote.
	for _, p := range []string{
		"oc-mirror/mirror1/batch-0001", "oc-mirror/mirror1/working-dir/cluster-resources",
		"oc-mirror/output/working-dir/dry-run/mapping.txt", "oc-mirror/output/batch-0002",
		"output/batch-0002", "oc-mirror/workspace/working-dir/delete/delete-images.yaml",
		"oc-mirror/workspace/working-dir/delete/delete-images-v4.11.yaml",
		"enterprise-content/working-dir/cluster-resources",
	} {
		if _, err := os.Stat(filepath.Join(home, p)); err != nil {
			t.Errorf("after the command lines: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "custom", "cache", ".airlock-cache", "operator-catalogs")); err != nil {
		t.Errorf("--cache-dir: %v", err)
	}
}

// demoRegistries starts a source and a mirror registry, seeds the source with
// the demo catalog and images, changes to a fresh folder and writes the demo
// configuration there (isc.yaml, isc-m2m.yaml) and a DeleteImageSetConfiguration
// of its fast channel (delete-isc.yaml, delete-image-set-config.yaml).
//
// The registries are airlock's embedded registry (what `airlock registry
// serve` runs) in registry processes built without the race detector
// (registrytest.Start): these tests are about the commands run against them,
// which run in this process under it. TestRegistryServeTLSHtpasswd and
// TestDemoScript run `airlock registry serve` itself.
func demoRegistries(ctx context.Context, t *testing.T, repo string) (tmp string, src, dst *registrytest.Registry) {
	t.Helper()
	tmp = t.TempDir()
	t.Chdir(tmp) // disk-to-mirror's default ./airlock-workspace, ./isc.yaml
	src = registrytest.Start(t, registrytest.WithFilesystem())
	dst = registrytest.Start(t, registrytest.WithFilesystem())
	if _, serr, err := runCmd(ctx, "registry", "seed", "--registry", src.Host(), "--dest-tls-verify=false",
		"--catalog-dir", filepath.Join(repo, "testdata", "demo", "catalog"), "--catalog-repo", "airlock-demo/demo-index", "--catalog-tag", "v1",
		"--image", "registry.example.com/tools/support-tools:1.4", "--work-dir", filepath.Join(tmp, "seed")); err != nil {
		t.Fatalf("seed: %v\n%s", err, serr)
	}
	isc, err := os.ReadFile(filepath.Join(repo, "testdata", "demo", "imageset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("quay.io/airlock-demo/", src.Host()+"/airlock-demo/", "registry.example.com/", src.Host()+"/").Replace(string(isc))
	del := "kind: DeleteImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\ndelete:\n  operators:\n    - catalog: " +
		src.Host() + "/airlock-demo/demo-index:v1\n      packages:\n        - name: demo-operator\n          channels:\n            - name: fast\n"
	for name, content := range map[string]string{"isc.yaml": cfg, "isc-m2m.yaml": cfg, "delete-isc.yaml": del, "delete-image-set-config.yaml": del} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp, src, dst
}
