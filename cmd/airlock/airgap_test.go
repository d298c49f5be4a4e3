package main

import (
	"context"
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
	return &airGap{ctx: ctx, tmp: tmp, src: src.host, mirror: registrytest.StartKind(t, registrytest.Distribution28), isc: string(isc)}
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
	// No bundle of stable lies between 1.2.1 and 1.2.9: the same images.
	wider := g.config(t, "wider.yaml", "maxVersion: 1.2.1", "maxVersion: 1.2.9")
	_, serr, err = g.run("mirror", "-c", wider, target)
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
