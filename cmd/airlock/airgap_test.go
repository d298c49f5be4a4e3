package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// airGap is the demo source registry, Debian's docker-registry as the mirror
// of the disconnected side, and the demo configuration in tmp/isc.yaml.
type airGap struct {
	ctx      context.Context
	tmp, src string
	mirror   *registrytest.Target
	isc      string
}

func startAirGap(t *testing.T) *airGap {
	t.Helper()
	if testing.Short() {
		t.Skip("runs two registries")
	}
	if why := registrytest.Missing(registrytest.Distribution28); why != "" {
		t.Skip(why)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	tmp, src, _ := demoRegistries(ctx, t, repo)
	isc, err := os.ReadFile(filepath.Join(tmp, "isc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return &airGap{ctx: ctx, tmp: tmp, src: src.Host(), mirror: registrytest.StartKind(t, registrytest.Distribution28), isc: string(isc)}
}

// config writes the demo configuration changed by the replacer pairs old, new
// into name and returns its path.
func (g *airGap) config(t *testing.T, name string, oldnew ...string) string {
	t.Helper()
	p := filepath.Join(g.tmp, name)
	if err := os.WriteFile(p, []byte(strings.NewReplacer(oldnew...).Replace(g.isc)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runLog returns the newest run log of the workspace ws (its working-dir/logs).
func (g *airGap) runLog(t *testing.T, ws string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(ws, "working-dir", "logs", "airlock-*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no run log in %s: %v", ws, err)
	}
	b, err := os.ReadFile(logs[len(logs)-1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run runs airlock and returns stdout, stderr and its error.
func (g *airGap) run(args ...string) (string, string, error) {
	return runCmd(g.ctx, args...)
}

// next returns the command the summary in serr prints after "next:", with the
// mirror filled in for REGISTRY/NAMESPACE ("" when none is printed).
func (g *airGap) next(serr, namespace string) []string {
	for _, l := range strings.Split(serr, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "airlock mirror -c ") {
			return strings.Fields(strings.Replace(strings.TrimPrefix(l, "airlock "), "REGISTRY/NAMESPACE", g.mirror.Host+"/"+namespace, 1))
		}
	}
	return nil
}

// TestAirGapBlockedAdditionalImage: an additional image blockedImages matches
// is left out of the archive, and the disk-to-mirror the summary prints
// (same configuration) loads it and writes the pinned configuration.
func TestAirGapBlockedAdditionalImage(t *testing.T) {
	g := startAirGap(t)
	isc := g.config(t, "blocked.yaml",
		"  additionalImages:\n", "  additionalImages:\n    - name: "+g.src+"/unwanted/thing:1.0\n",
		"  blockedImages:\n", "  blockedImages:\n    - name: /unwanted/\n")
	_, serr, err := g.run("mirror", "-c", isc, "file://"+filepath.Join(g.tmp, "target"))
	if err != nil {
		t.Fatalf("mirror-to-disk: %v\n%s", err, serr)
	}
	next := g.next(serr, "airgap")
	if next == nil {
		t.Fatalf("no next: command printed\n%s", serr)
	}
	ws := filepath.Join(g.tmp, "far")
	_, serr, err = g.run(append(next, "--workspace", ws, "--dest-tls-verify=false")...)
	if err != nil {
		t.Fatalf("the printed next: command: %v\n%s", err, serr)
	}
	if !strings.Contains(serr, "pinned:") {
		t.Errorf("disk-to-mirror wrote no pinned configuration\n%s", serr)
	}
}

// TestAirGapWiderConfigSameContent: a second mirror-to-disk with a wider
// configuration that selects the same images writes a batch recording that
// configuration (disk-to-mirror judges a configuration against the batch's),
// and the printed disk-to-mirror of each batch, in order, succeeds.
func TestAirGapWiderConfigSameContent(t *testing.T) {
	g := startAirGap(t)
	target := "file://" + filepath.Join(g.tmp, "target")
	_, serr, err := g.run("mirror", "-c", "isc.yaml", target)
	if err != nil {
		t.Fatalf("mirror-to-disk: %v\n%s", err, serr)
	}
	first := g.next(serr, "airgap")
	// The unsigned images are a note: once at info level, not a warning.
	const unsigned = "have no signature and are mirrored without one"
	if log := g.runLog(t, filepath.Join(g.tmp, "target")); strings.Count(log, unsigned) != 1 || strings.Contains(log, `level=WARN msg="25 image(s) have no signature`) {
		t.Errorf("the unsigned images' note is not logged once at info level:\n%s", log)
	}
	// No bundle of stable lies between 1.2.1 and 1.2.9: the same images.
	wider := g.config(t, "wider.yaml", "maxVersion: 1.2.1", "maxVersion: 1.2.9")
	_, serr, err = g.run("mirror", "-c", wider, "--log-level", "warn", target)
	if err != nil {
		t.Fatalf("second mirror-to-disk: %v\n%s", err, serr)
	}

	second := g.next(serr, "airgap")
	if second == nil || strings.Contains(serr, "nothing new") {
		t.Fatalf("a wider configuration wrote no batch to load it with\n%s", serr)
	}
	ws := filepath.Join(g.tmp, "far")
	for _, next := range [][]string{first, second} {
		if _, serr, err := g.run(append(next, "--workspace", ws, "--dest-tls-verify=false")...); err != nil {
			t.Fatalf("airlock %s: %v\n%s", strings.Join(next, " "), err, serr)
		}
	}
	// The same configuration again is nothing new.
	_, serr, err = g.run("mirror", "-c", wider, target)
	if err != nil || !strings.Contains(serr, "nothing new") {
		t.Fatalf("the same configuration again: %v\n%s", err, serr)
	}
}

// TestAirGapPartialBatch: an image that cannot be resolved does not keep the
// others from the archive: the batch holds them and records the failure, the
// run exits 2 (partial); the printed disk-to-mirror pushes what the batch
// holds and names the missing image (exit 2); once the image exists the next
// mirror-to-disk carries it (it is not "nothing new") and loading that batch
// completes. --all-or-nothing writes no batch.
func TestAirGapPartialBatch(t *testing.T) {
	g := startAirGap(t)
	isc := g.config(t, "partial.yaml", "  additionalImages:\n", "  additionalImages:\n    - name: "+g.src+"/tools/late:1.0\n")
	target := "file://" + filepath.Join(g.tmp, "target")
	ws := filepath.Join(g.tmp, "far")

	_, serr, err := g.run("mirror", "-c", isc, "--all-or-nothing", "file://"+filepath.Join(g.tmp, "strict"))
	if code := exitCodeOf(err); code != exitPartial || !strings.Contains(err.Error(), "no archive was written") {
		t.Fatalf("--all-or-nothing: exit %d, %v\n%s", code, err, serr)
	}

	_, serr, err = g.run("mirror", "-c", isc, target)
	if code := exitCodeOf(err); code != exitPartial || !strings.Contains(err.Error(), "partial result: 1 image(s) failed") {
		t.Fatalf("partial mirror-to-disk: exit %d, %v\n%s", code, err, serr)
	}
	if !strings.Contains(serr, g.src+"/tools/late:1.0: resolve ") {
		t.Errorf("the summary does not say in one line why the image failed\n%s", serr)
	}
	next := g.next(serr, "airgap")
	if next == nil {
		t.Fatalf("a partial batch printed no next: command\n%s", serr)
	}
	_, serr, err = g.run(append(next, "--workspace", ws, "--dest-tls-verify=false")...)
	if code := exitCodeOf(err); code != exitPartial || !strings.Contains(err.Error(), "batch-0001 is partial: 1 image(s)") {
		t.Fatalf("disk-to-mirror of a partial batch: exit %d, %v\n%s", code, err, serr)
	}
	if !strings.Contains(serr, g.src+"/tools/late:1.0: not in the archive: it failed when batch-0001") {
		t.Errorf("disk-to-mirror's summary does not name the missing image\n%s", serr)
	}
	res, rerr := os.ReadFile(filepath.Join(ws, "working-dir", "results.json"))
	if rerr != nil || !strings.Contains(string(res), "tools/late:1.0") || !strings.Contains(string(res), `"status": "failed"`) {
		t.Errorf("results.json does not list the missing image: %v\n%s", rerr, res)
	}

	// The image appears at the source: the next batch carries it.
	if _, serr, err := g.run("registry", "seed", "--registry", g.src, "--dest-tls-verify=false", "--image", "registry.example.com/tools/late:1.0", "--work-dir", filepath.Join(g.tmp, "seed2")); err != nil {
		t.Fatalf("seed: %v\n%s", err, serr)
	}
	_, serr, err = g.run("mirror", "-c", isc, target)
	if err != nil || strings.Contains(serr, "nothing new") {
		t.Fatalf("mirror-to-disk after the image appeared: %v\n%s", err, serr)
	}
	if _, serr, err = g.run(append(g.next(serr, "airgap"), "--workspace", ws, "--dest-tls-verify=false")...); err != nil {
		t.Fatalf("loading the batch that carries the image: %v\n%s", err, serr)
	}
}

// exitCodeOf is the exit code main gives err (0 for nil).
func exitCodeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	}
	return 1
}

// TestAirGapFilesOneLanguage: mapping.txt and missing.txt of a dry run on
// both sides name images in the same docker:// form, line for line, with no
// internal path (a rebuilt catalog is read from an OCI layout in the
// workspace), and the destination as results.json names it.
func TestAirGapFilesOneLanguage(t *testing.T) {
	g := startAirGap(t)
	target := "file://" + filepath.Join(g.tmp, "target")
	check := func(side, wd string) {
		t.Helper()
		read := func(name string) []string {
			b, err := os.ReadFile(filepath.Join(wd, "dry-run", name))
			if err != nil {
				t.Fatal(err)
			}
			return strings.Split(strings.TrimSpace(string(b)), "\n")
		}
		mapping, missing := read("mapping.txt"), read("missing.txt")
		if len(missing) != len(mapping) {
			t.Errorf("%s: %d lines in missing.txt, %d in mapping.txt (nothing is at the destination yet)", side, len(missing), len(mapping))
		}
		res, err := os.ReadFile(filepath.Join(wd, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range missing {
			src, dst, ok := strings.Cut(l, "=")
			if !ok || !strings.HasPrefix(src, "docker://") || strings.Contains(l, "layout:") || (side == "disk-to-mirror") != strings.HasPrefix(dst, "docker://") {
				t.Errorf("%s: missing.txt line %q", side, l)
			}
			if i < len(mapping) && mapping[i] != l {
				t.Errorf("%s: missing.txt says %q where mapping.txt says %q", side, l, mapping[i])
			}
			if !strings.Contains(string(res), `"destination": "`+strings.TrimPrefix(dst, "docker://")+`"`) {
				t.Errorf("%s: results.json does not name the destination %s", side, dst)
			}
		}
	}
	if _, serr, err := g.run("mirror", "-c", "isc.yaml", "--dry-run", target); err != nil {
		t.Fatalf("%v\n%s", err, serr)
	}
	check("mirror-to-disk", filepath.Join(g.tmp, "target", "working-dir"))
	_, serr, err := g.run("mirror", "-c", "isc.yaml", target)
	if err != nil {
		t.Fatalf("%v\n%s", err, serr)
	}
	next := g.next(serr, "airgap")
	if _, serr, err := g.run(append(next, "--workspace", filepath.Join(g.tmp, "far"), "--dest-tls-verify=false", "--dry-run")...); err != nil {
		t.Fatalf("%v\n%s", err, serr)
	}
	check("disk-to-mirror", filepath.Join(g.tmp, "far", "working-dir"))
}

// TestAirGapSameReport: disk-to-mirror's report.json (and so report.html) has
// the same per-package view as mirror-to-disk's: the same packages, channels,
// bundles kept and dropped channels, and the upgrade graphs.
func TestAirGapSameReport(t *testing.T) {
	g := startAirGap(t)
	_, serr, err := g.run("mirror", "-c", "isc.yaml", "file://"+filepath.Join(g.tmp, "target"))
	if err != nil {
		t.Fatalf("%v\n%s", err, serr)
	}
	ws := filepath.Join(g.tmp, "far")
	if _, serr, err := g.run(append(g.next(serr, "airgap"), "--workspace", ws, "--dest-tls-verify=false")...); err != nil {
		t.Fatalf("%v\n%s", err, serr)
	}
	view := func(wd string) (string, int) {
		b, err := os.ReadFile(filepath.Join(wd, "working-dir", "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Catalogs []struct {
				Source   string
				Packages []struct {
					Name              string
					Channels, Bundles []json.RawMessage
					DroppedChannels   []json.RawMessage `json:"droppedChannels"`
					Graph             string
				}
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		var out []string
		graphs := 0
		for _, c := range r.Catalogs {
			for _, p := range c.Packages {
				out = append(out, fmt.Sprintf("%s %s: %d channels, %d bundles, %d dropped, graph %v", c.Source, p.Name, len(p.Channels), len(p.Bundles), len(p.DroppedChannels), p.Graph != ""))
				if p.Graph != "" {
					graphs++
				}
			}
		}
		return strings.Join(out, "\n"), graphs
	}
	m2d, graphs := view(filepath.Join(g.tmp, "target"))
	d2m, _ := view(ws)
	if graphs == 0 || !strings.Contains(m2d, "bundles") {
		t.Fatalf("mirror-to-disk's report has no per-package view:\n%s", m2d)
	}
	if d2m != m2d {
		t.Errorf("disk-to-mirror's report differs from mirror-to-disk's:\n--- mirror-to-disk\n%s\n--- disk-to-mirror\n%s", m2d, d2m)
	}
}
