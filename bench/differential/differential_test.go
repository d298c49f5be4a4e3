//go:build differential

package differential

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/bench"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/release/graph"
)

// explained are the configurations where oc-mirror and airlock select
// differently, each explained in docs/releases.md ("Differences with
// oc-mirror's selection"). A difference not listed fails the test, and so
// does a listed one that has gone.
var explained = map[string]string{
	"err-shortestpath-risky-range": "no unconditional path: oc-mirror mirrors min and max alone, which no cluster can update between without a conditional update",
	"err-no-unconditional-path":    "same as err-shortestpath-risky-range, across minors",
	"eus-heads":                    "oc-mirror joins channels through eus-4.15, which is not served, and fails",
	"eus-ranges":                   "oc-mirror joins channels through eus-4.15, which is not served, and fails",
	"eus-ranges-conditional":       "oc-mirror joins channels through eus-4.15, which is not served, and fails",
	"eus-through-stable":           "oc-mirror's join ends 4.15.59 -> 4.16.10, an update no graph has",
	"err-min-not-in-channel":       "oc-mirror takes versions the channel lacks as bounds, silently",
	"ocmirror-head":                "payloads named by tag: oc-mirror asks for the signature of an empty digest",
	"ocmirror-full":                "payloads named by tag: oc-mirror asks for the signature of an empty digest",
	"ocmirror-shortestpath":        "payloads named by tag: oc-mirror asks for the signature of an empty digest",
	"ocmirror-stable-4.15":         "payloads named by tag: oc-mirror asks for the signature of an empty digest",
}

// perRun bounds one oc-mirror dry run.
const perRun = 3 * time.Minute

func TestDifferential(t *testing.T) {
	bin := bench.FindOcMirror(os.Getenv("OC_MIRROR"))
	if bin == "" {
		t.Skip("no oc-mirror binary (OC_MIRROR=PATH, oc-mirror on PATH, or scripts/build-oc-mirror.sh builds one into " + bench.OcMirrorCache() + ")")
	}
	graphs := cincinnatitest.New(t)
	reg := registrytest.Start(t)
	base := releasetest.Push(t, reg.Host(), releasetest.Spec{Version: "0.0.0", Components: 2})
	key := signtest.NewReleaseKey(t, "rsa")
	keyFile := filepath.Join(t.TempDir(), "release-key.asc")
	if err := os.WriteFile(keyFile, key.Armored, 0o600); err != nil {
		t.Fatal(err)
	}
	store := newSigner(t, key, reg.Host(), base.Ref, payloadIndex(t))

	var table bytes.Buffer
	table.WriteString("| configuration | oc-mirror v2 | airlock | |\n|---|---|---|---|\n")
	ran := 0
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) {
			ran++
			url := graphs.URL
			if c.OCMirrorFixtures {
				url = graphs.OCMirrorURL
			}
			isc := "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  platform:\n" + indent(c.Platform, "    ")
			ours := airlockChoice(t, c, isc, url)
			store.reset()
			theirs, shown := ocMirrorChoice(t, bin, c, isc, url, reg.Host(), store, keyFile)
			verdict := "same"
			if ours != theirs {
				verdict = "different"
				if _, ok := explained[c.Name]; !ok {
					t.Errorf("oc-mirror selects %q, airlock %q: explain the difference in docs/releases.md and list it in explained", theirs, ours)
				}
			} else if _, ok := explained[c.Name]; ok {
				t.Errorf("listed as different but both select %q: update explained and docs/releases.md", ours)
			}
			t.Logf("oc-mirror: %s\nairlock: %s", shown, ours)
			fmt.Fprintf(&table, "| %s | %s | %s | %s |\n", c.Name, shown, ours, verdict)
		})
	}
	if ran < len(Cases) {
		return // -run picked some: the table is checked only whole
	}
	t.Logf("\n%s", table.String())
	golden.Check(t, filepath.Join("testdata", "differential.md"), table.Bytes())
}

// TestCasesMatchGoldens keeps Cases and release/graph's Choose goldens one
// set: each case has a golden and each golden a case.
func TestCasesMatchGoldens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "release", "graph", "testdata", "choose", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var goldens, cases []string
	for _, f := range files {
		goldens = append(goldens, strings.TrimSuffix(filepath.Base(f), ".golden"))
	}
	for _, c := range Cases {
		cases = append(cases, c.Name)
	}
	slices.Sort(goldens)
	slices.Sort(cases)
	if !slices.Equal(goldens, cases) {
		t.Errorf("cases %v\ngoldens %v", cases, goldens)
	}
}

// airlockChoice is what airlock selects for isc: "arch version …" per
// architecture, or "refused". It must be what the Choose golden records.
func airlockChoice(t *testing.T, c Case, isc, url string) string {
	t.Helper()
	cfg, err := imageset.Load(strings.NewReader(isc), "isc.yaml")
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := graph.Choose(ctx, cfg.Mirror.Platform, graph.NewClient(graph.ClientOptions{URL: url}), graph.ChooseOptions{AllowConditional: c.AllowConditional})
	var nodes []node
	if err == nil {
		for _, r := range got.Releases {
			nodes = append(nodes, node{r.Arch, r.Version})
		}
	}
	s := format(nodes, err != nil)
	if want := goldenChoice(t, c.Name); s != want {
		t.Errorf("%s: airlock selects %q, its Choose golden %q: Cases and release/graph's chooseCases disagree", c.Name, s, want)
	}
	return s
}

// goldenChoice reads a Choose golden's selection, formatted as format does.
func goldenChoice(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "release", "graph", "testdata", "choose", name+".golden"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(b, []byte("error:")) {
		return format(nil, true)
	}
	var nodes []node
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if strings.HasPrefix(sc.Text(), "  ") && !strings.HasPrefix(sc.Text(), "    ") && len(f) == 3 && strings.Contains(f[1], ".") {
			nodes = append(nodes, node{f[0], f[1]})
		}
		if strings.HasPrefix(sc.Text(), "risks:") {
			break
		}
	}
	return format(nodes, false)
}

// format writes a selection as "arch: v1 v2 …; arch: …" in version order,
// "refused" for an error, "nothing" for none.
func format(nodes []node, refused bool) string {
	if refused {
		return "refused"
	}
	if len(nodes) == 0 {
		return "nothing"
	}
	byArch := map[string][]string{}
	for _, n := range nodes {
		if !slices.Contains(byArch[n.Arch], n.Version) {
			byArch[n.Arch] = append(byArch[n.Arch], n.Version)
		}
	}
	var archs []string
	for a := range byArch {
		archs = append(archs, a)
	}
	slices.Sort(archs)
	var parts []string
	for _, a := range archs {
		vs := byArch[a]
		slices.SortFunc(vs, compareVersions)
		parts = append(parts, a+": "+strings.Join(vs, " "))
	}
	return strings.Join(parts, "; ")
}

// ocMirrorChoice runs oc-mirror's mirror-to-mirror dry run of isc against
// the update service at url and returns what it selected, formatted as
// format does ("refused" when the run fails), and that with the reason of a
// failure for the table. The selection is the releases whose signatures it
// verified (it verifies every release it selected before it copies any),
// checked against the release images of its dry run's mapping.txt.
func ocMirrorChoice(t *testing.T, bin string, c Case, isc, url, registry string, store *signer, keyFile string) (choice, shown string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "isc.yaml"), []byte(isc), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := bench.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), perRun)
	defer cancel()
	ws := filepath.Join(dir, "ws")
	cmd := exec.CommandContext(ctx, bin, "--v2", "-c", filepath.Join(dir, "isc.yaml"), "--workspace", location.File(ws).String(),
		location.Docker(registry+"/mirror").String(), "--dry-run", "--dest-tls-verify=false", "--src-tls-verify=false",
		"-p", fmt.Sprint(port), "--cache-dir", filepath.Join(dir, "cache"), "--log-level", "debug")
	cmd.Dir = dir
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_RUNTIME_DIR="+home, "UPDATE_URL_OVERRIDE="+url,
		"OCP_SIGNATURE_URL="+store.URL(), "OCP_SIGNATURE_VERIFICATION_PK="+keyFile)
	out, runErr := cmd.CombinedOutput()
	logFile := filepath.Join(os.TempDir(), "differential-"+c.Name+".log")
	if err := os.WriteFile(logFile, out, 0o644); err != nil {
		t.Log(err)
	}
	asked, _ := store.requests()
	if runErr != nil {
		shown = "refused: " + lastError(out)
		if len(asked) > 0 {
			shown = "refused, after verifying " + format(asked, false) + ": " + lastError(out)
		}
		return "refused", shown
	}
	mapped, err := mappedReleases(ws)
	if err != nil {
		t.Fatalf("oc-mirror succeeded but wrote no mapping.txt (%v); its output: %s", err, logFile)
	}
	if s := format(mapped, false); s != format(asked, false) {
		t.Errorf("oc-mirror verified the signatures of %q but its mapping.txt lists %q", format(asked, false), s)
	}
	return format(mapped, false), format(mapped, false)
}

// releaseTag is a release image's tag in mapping.txt: <version>-<arch>.
var releaseTag = regexp.MustCompile(`/ocp/release:([0-9][^=\s]*)-(x86_64|aarch64|ppc64le|s390x|multi)=`)

// mappedReleases reads the release images of the dry run's mapping.txt.
func mappedReleases(ws string) ([]node, error) {
	b, err := os.ReadFile(filepath.Join(ws, "working-dir", "dry-run", "mapping.txt"))
	if err != nil {
		return nil, err
	}
	arch := map[string]string{}
	for a, s := range tagArch {
		arch[s] = a
	}
	var nodes []node
	for _, m := range releaseTag.FindAllStringSubmatch(string(b), -1) {
		nodes = append(nodes, node{arch[m[2]], m[1]})
	}
	return nodes, nil
}

// lastError is the last line of oc-mirror's output that reports an error,
// without its log prefix, its function tags and what changes from run to run
// (addresses; which payload of several it happened to look at first).
func lastError(out []byte) string {
	var last string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "[ERROR]") || strings.Contains(strings.ToLower(l), "error") {
			last = l
		}
	}
	for _, r := range []struct{ re, with string }{
		{`127\.0\.0\.1:[0-9]+`, "127.0.0.1"},
		{`^.*\[(ERROR|WARN|INFO)\]\s*:?\s*`, ""},
		{`\[[A-Za-z]+\]\s*`, ""},
		{`collection error: |error list `, ""},
		{`[\[\]]`, ""},
		{`(no signature found for) .*`, "$1 a payload"},
	} {
		last = regexp.MustCompile(r.re).ReplaceAllString(last, r.with)
	}
	last = strings.ReplaceAll(strings.TrimSpace(last), "|", "/")
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	return last
}

// compareVersions orders semantic versions (and anything else as text).
func compareVersions(a, b string) int {
	va, ea := semver.Parse(a)
	vb, eb := semver.Parse(b)
	if ea != nil || eb != nil {
		return strings.Compare(a, b)
	}
	return va.Compare(vb)
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}
