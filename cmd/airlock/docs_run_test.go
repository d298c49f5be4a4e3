package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// docPage is a page whose command lines TestDocsRun runs, in order, in a
// folder of its own, against the demo registries: the source seeded with the
// demo catalog (shared by every page: a page only seeds it again, which is
// idempotent, or adds a repository no other page reads) and registries of its
// own, empty at the start.
type docPage struct {
	page string
	// fresh is how many empty registries the page gets: R1, R2, … in places.
	fresh int
	// places maps what the page writes to the test's, in pairs: "SRC" is the
	// seeded source's host:port, "R1"… the page's registries, "CLOSED" a
	// host:port nobody listens on, "TMP" the page's folder and "REPO" the
	// repository.
	places []string
	// files are copied into the page's folder first, in pairs: a path in the
	// repository (a file or a folder), then its name in the folder. Places
	// are applied to the YAML files' content.
	files []string
	// filePlaces are applied to the copied YAML files after places (as
	// places, in pairs).
	filePlaces []string
	// flags are added to every line whose command takes them and that does
	// not give them: the page says it leaves them out (plain HTTP, quiet).
	flags []string
	// seed, when given, are the arguments of an `airlock registry seed` run
	// first (places applied).
	seed []string
	// end ends a command's output: what follows is the page's own (a script's
	// step headers, files it lists).
	end *regexp.Regexp
}

// demoConfig is the demo's ImageSetConfiguration pointed at the seeded source.
var demoConfig = []string{"quay.io/airlock-demo/", "SRC/airlock-demo/", "registry.example.com/", "SRC/"}

var plainHTTP = []string{"--src-tls-verify=false", "--dest-tls-verify=false", "--log-level=warn"}

// docRuns are the pages with command lines; every other page's lines are in
// blocks marked docs-test: skip (TestDocsEveryLineRuns).
var docRuns = []docPage{
	{page: "README.md", fresh: 2, places: []string{
		"/var/lib/airlock", "TMP/ws", "/media/usb", "TMP/usb", "/mnt/usb", "TMP/usb",
		"mirror.example.com:5000", "R1", "mirror.internal:5000", "R2",
	}, files: []string{"testdata/demo/imageset.yaml", "isc.yaml"}, filePlaces: demoConfig, flags: plainHTTP},
	{page: "docs/archive.md", fresh: 4, places: []string{
		"/tmp/i12seq", "TMP", "127.0.0.1:15080", "SRC", "127.0.0.1:15081", "R1", "127.0.0.1:15082", "R2", "127.0.0.1:15083", "R3",
	}, files: []string{"testdata/docs/archive", "."}},
	{page: "docs/sharding.md", fresh: 2, places: []string{
		"127.0.0.1:5001", "SRC", "127.0.0.1:44401", "SRC", "127.0.0.1:5002", "R1", "127.0.0.1:34949", "R2", "/tmp/shard", "TMP",
	}, files: []string{"testdata/docs/sharding/isc.yaml", "isc.yaml"}, flags: plainHTTP},
	{page: "docs/catalogs.md", fresh: 1, places: []string{"registry.example.com", "R1"},
		files: []string{"mirror/catalogimage/testdata/catalog/full", "catalog"}, flags: plainHTTP,
		seed: []string{"--registry", "R1", "--dest-tls-verify=false", "--catalog-dir", "catalog", "--catalog-repo", "catalogs/index", "--catalog-tag", "v1"}},
	{page: "docs/catalog-io.md", files: []string{"testdata/demo/catalog", "catalog"}},
	{page: "docs/catalog-validate.md", files: []string{"testdata/demo/catalog", "configs", "testdata/docs/catalog-validate", "."}},
	{page: "docs/catalog-prune.md", files: []string{
		"prune/testdata/filter/dependencies/config.yaml", "imageset.yaml", "prune/testdata/filter/_catalogs/sample", "catalog"}},
	{page: "docs/legacy-catalogs.md", files: []string{
		"fbc/legacy/testdata/manifests", "manifests", "fbc/legacy/testdata/bundles/demo-operator.v0.4.0", "widget-bundle",
		"fbc/legacy/testdata/manifests.golden.json", "other-catalog/catalog.json"}},
	{page: "docs/report.md", files: []string{"prune/testdata/filter/_catalogs/sample", "catalog"}},
	// $UPDATE_URL_OVERRIDE points at a local update service serving
	// stable-4.15 of two releases pushed to the seeded source,
	// $OCP_SIGNATURE_URL at their signature store (TestDocsRun).
	{page: "docs/releases.md", fresh: 2, places: []string{"mirror.example.com:5000", "R1", "mirror.internal:5000", "R2"},
		files: []string{"testdata/docs/releases", "."}, flags: plainHTTP},
	// A local chart whose images the seeded source holds.
	{page: "docs/helm.md", fresh: 2, places: []string{
		"registry.example.com", "SRC", "mirror.example.com:5000", "R1", "mirror.internal:5000", "R2", "/media/usb", "TMP/usb",
	}, files: []string{"testdata/docs/helm", "."}, flags: plainHTTP},
	{page: "docs/copy.md", places: []string{"127.0.0.1:5998", "CLOSED"}, files: []string{"testdata/docs/sharding/isc.yaml", "isc.yaml"}},
	// Seeding is idempotent: the page seeds the source again.
	{page: "docs/registry.md", places: []string{"127.0.0.1:5000", "SRC", "testdata/", "REPO/testdata/"}},
	{page: "docs/demo.md", fresh: 2, places: []string{
		"/tmp/progdemo2/imageset.yaml", "TMP/isc.yaml",
		"/tmp/progdemo2", "TMP",
		"/work/wt-progress", "REPO",
		"127.0.0.1:36079", "R1",
		"127.0.0.1:37019", "R2",
		"127.0.0.1:5000", "SRC", // "your own catalog": seeding is idempotent
	}, files: []string{"testdata/demo/imageset.yaml", "isc.yaml", "testdata/demo/catalog", "my-catalog"}, filePlaces: []string{
		"quay.io/airlock-demo/", "R1/airlock-demo/", "registry.example.com/", "R1/",
	}, end: regexp.MustCompile(`^(==> |ImageSetConfiguration \(|source registry stopped)`)},
}

var (
	shapeHex    = regexp.MustCompile(`\b[0-9a-f]{7,}\b`)
	shapeNumber = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
	shapeSpace  = regexp.MustCompile(`\s+`)
	shapeExit   = regexp.MustCompile(`^\(exit(?: status)? ([0-9]+)\)$`)
)

// shape is what of an output line must match the page: digests, numbers
// (sizes, counts, ports, times) and column widths may differ.
func shape(s string) string {
	s = shapeHex.ReplaceAllString(s, "N")
	s = shapeNumber.ReplaceAllString(s, "N")
	s = strings.ReplaceAll(s, "N…", "N") // a digest the page abridges
	return strings.TrimSpace(shapeSpace.ReplaceAllString(s, " "))
}

// shownIn says whether the shape w of a line the page shows is among the
// shapes got of what the command printed; a "…" in w stands for any text
// (the page abridges the line there).
func shownIn(w string, got map[string]bool) bool {
	if got[w] {
		return true
	}
	if !strings.Contains(w, "…") {
		return false
	}
	parts := strings.Split(w, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(strings.TrimSpace(p))
	}
	re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
	for g := range got {
		if re.MatchString(g) {
			return true
		}
	}
	return false
}

// wantExit is the exit status the page shows for a command: "(exit status N)"
// or "(exit N)", else -1 (any but 0) when it shows an "airlock: " error line,
// else 0.
func wantExit(output []string) int {
	code := 0
	for _, l := range output {
		l = strings.TrimSpace(l)
		if m := shapeExit.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		if strings.HasPrefix(l, "airlock: ") {
			code = -1
		}
	}
	return code
}

// exitStatus is what main makes of err: the exit status and the line it prints.
func exitStatus(err error) (int, string) {
	var ee *exitError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &ee):
		return ee.code, "airlock: " + ee.msg
	default:
		return 1, "airlock: " + err.Error()
	}
}

// TestDocsEveryLineRuns: a page with command lines that are not in a block
// marked docs-test: skip is run by TestDocsRun.
func TestDocsEveryLineRuns(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	run := map[string]bool{"docs/from-oc-mirror.md": true} // its table: TestOCMirrorCommandLines
	for _, p := range docRuns {
		run[p.page] = true
	}
	for _, page := range docPages(t, repo) {
		for _, c := range readDocFile(t, repo, page) {
			if c.skip == "" && !run[c.file] {
				t.Errorf("%s:%d: %s: the page is not in docRuns (cmd/airlock/docs_run_test.go): add it, or mark the block <!-- docs-test: skip REASON -->", c.file, c.line, c.text)
			}
		}
	}
}

// TestDocsRun runs the pages of docRuns: each line must exit as the page
// shows and print (on stdout or stderr) every output line the page shows under
// it, in shape.
func TestDocsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo registries and the documented command lines")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, src, _ := demoRegistries(ctx, t, repo)
	t.Setenv("UPDATE_URL_OVERRIDE", docsReleases(t, src.Host())) // docs/releases.md
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, page := range docRuns {
		t.Run(page.page, func(t *testing.T) {
			runDocPage(ctx, t, repo, page, src.Host(), closed)
		})
	}
}

func runDocPage(ctx context.Context, t *testing.T, repo string, page docPage, src, closed string) {
	tmp := t.TempDir()
	t.Chdir(tmp)
	names := []string{"SRC", src, "CLOSED", closed, "TMP", tmp, "REPO", repo}
	for i := page.fresh; i >= 1; i-- { // R10 before R1
		r := registrytest.Start(t, registrytest.WithFilesystem()) // as demoRegistries' (a registry process)
		names = append(names, "R"+strconv.Itoa(i), r.Host())
	}
	test := strings.NewReplacer(names...)
	var pairs []string
	for i := 0; i < len(page.places); i += 2 {
		pairs = append(pairs, page.places[i], test.Replace(page.places[i+1]))
	}
	places := strings.NewReplacer(pairs...)
	var filePairs []string
	for i := 0; i < len(page.filePlaces); i += 2 {
		filePairs = append(filePairs, page.filePlaces[i], test.Replace(page.filePlaces[i+1]))
	}
	filePlaces := strings.NewReplacer(filePairs...)
	for i := 0; i < len(page.files); i += 2 {
		copyDocFiles(t, filepath.Join(repo, page.files[i]), filepath.Join(tmp, page.files[i+1]), places, filePlaces)
	}
	if page.seed != nil {
		args := []string{"registry", "seed", "--work-dir", filepath.Join(tmp, "seed")}
		for _, a := range page.seed {
			args = append(args, test.Replace(a))
		}
		if _, serr, err := runCmd(ctx, args...); err != nil {
			t.Fatalf("%s: seed: %v\n%s", page.page, err, serr)
		}
	}
	cmds := readDocFile(t, repo, filepath.Join(repo, page.page))
	ran, compared := 0, 0
	for _, c := range cmds {
		if c.skip != "" || (len(c.args) >= 2 && c.args[0] == "registry" && c.args[1] == "serve") {
			continue // not run (marked), or the registries the test started
		}
		for _, p := range c.pre {
			if len(p) != 3 || p[0] != "rm" || (p[1] != "-r" && p[1] != "-rf") {
				t.Fatalf("%s:%d: %s: the test runs only `rm -r DIR` before airlock, not %q", c.file, c.line, c.text, p)
			}
			if err := os.RemoveAll(places.Replace(p[2])); err != nil {
				t.Fatal(err)
			}
		}
		args := make([]string, len(c.args))
		for i, a := range c.args {
			args[i] = places.Replace(a)
		}
		args = addDocFlags(args, page.flags)
		for _, e := range c.env {
			k, v, _ := strings.Cut(e, "=")
			t.Setenv(k, places.Replace(v))
		}
		out, serr, err := runCmd(ctx, args...)
		for _, e := range c.env {
			k, _, _ := strings.Cut(e, "=")
			os.Unsetenv(k)
		}
		code, msg := exitStatus(err)
		if want := wantExit(c.output); code != want && (want != -1 || code == 0) {
			t.Fatalf("%s:%d: %s\nran airlock %s: exit status %d, the page shows %d\n%s%s%s", c.file, c.line, c.text, strings.Join(args, " "), code, want, out, serr, msg)
		}
		ran++
		got := map[string]bool{}
		for _, l := range strings.Split(out+serr+msg, "\n") {
			got[shape(asInTmp(l))] = true
		}
		for _, want := range c.output {
			if page.end != nil && page.end.MatchString(want) {
				break
			}
			w := shape(asInTmp(places.Replace(want)))
			if w == "" || strings.HasPrefix(w, "…") || strings.HasPrefix(w, "#") || shapeExit.MatchString(strings.TrimSpace(want)) {
				continue // abridged, a comment, the exit status
			}
			compared++
			if !shownIn(w, got) {
				t.Errorf("%s:%d: %s: the page shows %q, the command printed no such line:\n%s%s%s", c.file, c.line, c.text, strings.TrimSpace(want), out, serr, msg)
			}
		}
	}
	if ran == 0 {
		t.Fatalf("%s: no command line run", page.page)
	}
	t.Logf("%s: %d command lines run, %d output lines compared", page.page, ran, compared)
}

// asInTmp is s with the temporary directory written /tmp, as the pages
// show temporary files: make test may give the tests another TMPDIR
// (scripts/test-tmpdir.sh). Applied to what the page shows (its places
// replaced) and to what the command printed alike.
func asInTmp(s string) string {
	if tmp := os.TempDir(); tmp != "/tmp" {
		return strings.ReplaceAll(s, tmp, "/tmp")
	}
	return s
}

// addDocFlags adds to args each of flags the command takes and args lack.
func addDocFlags(args, flags []string) []string {
	if len(flags) == 0 {
		return args
	}
	root := newRootCmd()
	cmd, _, err := root.Find(MirrorArgs(root, args))
	if err != nil {
		return args
	}
	for _, f := range flags {
		name, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if cmd.Flags().Lookup(name) == nil {
			continue
		}
		given := false
		for _, a := range args {
			if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
				given = true
			}
		}
		if !given {
			args = append(args, f)
		}
	}
	return args
}

// copyDocFiles copies the file or folder from to to, applying places, then
// filePlaces, to YAML files.
func copyDocFiles(t *testing.T, from, to string, places, filePlaces *strings.Replacer) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if ext := filepath.Ext(p); ext == ".yaml" || ext == ".yml" {
			b = []byte(filePlaces.Replace(places.Replace(string(b))))
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", from, err)
	}
}

// TestDocsReaderForms: the forms of command line the pages use are read as
// the shell would run them, and shown output compares by shape.
func TestDocsReaderForms(t *testing.T) {
	page := "```sh\nairlock mirror -c isc.yaml file:///media/usb   # a comment\n" +
		"airlock registry gc --root DIR --dry-run && airlock registry gc --root DIR\n" +
		"airlock catalog graph ./catalog --package etcd | dot -Tpdf > etcd.pdf\n" +
		"oc apply -f x\n```\n" +
		"```\n$ JOB_COMPLETION_INDEX=1 airlock mirror --shards 2 docker://r/ns\nsummary\n" +
		"$ rm -r manifests/x && airlock catalog render ./manifests --output-dir ./c2\nairlock: refused\n" +
		"$ ls\nairlock_000001.tar\n" +
		"airlock mirror -c CONFIG   (a plain block: not a command)\n```\n"
	cmds, err := readDocCommands("page.md", strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		got = append(got, fmt.Sprintf("%d env=%v pre=%v args=%v out=%v", c.line, c.env, c.pre, c.args, c.output))
	}
	want := []string{
		"2 env=[] pre=[] args=[mirror -c isc.yaml file:///media/usb] out=[]",
		"3 env=[] pre=[] args=[registry gc --root DIR --dry-run] out=[]",
		"3 env=[] pre=[] args=[registry gc --root DIR] out=[]",
		"4 env=[] pre=[] args=[catalog graph ./catalog --package etcd] out=[]",
		"8 env=[JOB_COMPLETION_INDEX=1] pre=[] args=[mirror --shards 2 docker://r/ns] out=[summary]",
		"10 env=[] pre=[[rm -r manifests/x]] args=[catalog render ./manifests --output-dir ./c2] out=[airlock: refused]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	printed := map[string]bool{}
	for _, l := range []string{
		"  blobs:     49 sent (61.5 KiB), 9 mounted from another repository",
		"  x@sha256:7140e8d55874529b2fdc74ca39d87a54ba1faf63287cf178a808cf9aea9c6077 (127.0.0.1:41047/a:v2.0.0)",
		"load them (12 blobs missing: sha256:26e1a965c47f0000 (needed in 127.0.0.1:1/mirror/a/b), sha256:ab (needed in c) and 7 more); or --full",
	} {
		printed[shape(l)] = true
	}
	for shown, want := range map[string]bool{
		"  blobs:     72 sent (88.5 KiB), 3 mounted from another repository":                                    true,
		"  blobs:     72 sent (88.5 KiB), 3 mounted from another registry":                                      false,
		"  x@sha256:1234abcd… (127.0.0.1:5001/a:v1.0.0)":                                                        true,
		"  y@sha256:1234abcd… (127.0.0.1:5001/a:v1.0.0)":                                                        false,
		"load them (12 blobs missing: sha256:26e1a965c47f… (needed in 127.0.0.1:15082/mirror/…), …); or --full": true,
		"load them (12 blobs missing: sha256:26e1a965c47f… (needed in 127.0.0.1:15082/other/…), …); or --full":  false,
	} {
		if shownIn(shape(shown), printed) != want {
			t.Errorf("%q shown: matched %v, want %v", shown, !want, want)
		}
	}
	for out, want := range map[string]int{"summary": 0, "airlock: refused": -1, "airlock: refused\n(exit status 2)": 2, "(exit 3)": 3} {
		if got := wantExit(strings.Split(out, "\n")); got != want {
			t.Errorf("wantExit(%q) = %d, want %d", out, got, want)
		}
	}
}
