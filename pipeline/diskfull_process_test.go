package pipeline_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// smallDiskShell runs script with sh in a mount namespace of its own (a user
// namespace too, so no privilege is needed where the kernel allows
// unprivileged ones), where the script may mount a size-limited tmpfs: a
// filesystem that fills up for real. It skips the test where namespaces
// cannot be made.
func smallDiskShell(t *testing.T, script string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed: no small filesystem to fill")
	}
	if out, err := exec.Command("unshare", "-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs $d && umount $d && rmdir $d").CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs in a user+mount namespace here (%v: %s)", err, out)
	}
	cmd := exec.Command("unshare", "-rm", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestMirrorToDiskDiskFullWhileStaging fills a real filesystem (a 3 MiB
// tmpfs) while a mirror-to-disk stages four 2 MiB layers from Debian's
// docker-registry, with the free-space check skipped so that the disk fills
// in the middle of the copy. The run must say that the disk is full in its
// headline, with what to do, and not advise fixing or blocking images; after
// the filesystem grows, the same command finishes the batch, and the layers
// already staged are not fetched again.
func TestMirrorToDiskDiskFullWhileStaging(t *testing.T) {
	t.Parallel()
	src := registrytest.StartKind(t, registrytest.Distribution28)
	const layer = 2 << 20
	for i := range 4 {
		imagetest.MustPush(t, fmt.Sprintf("%s/apps/big%d:1.0", src.Host, i), fakeimage.Spec{Seed: uint64(1200 + i), Layers: 1, LayerSize: layer})
	}
	counter := registrytest.NewBlobCounter(t, src.Host)
	var lines []string
	for i := range 4 {
		lines = append(lines, fmt.Sprintf("  - name: %s/apps/big%d:1.0", counter.Host(), i))
	}
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(lines, "\n")+"\n")
	target := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf("%q mirror -c %q --skip-space-check %q", airlockBinary(t), cfg, location.File(target).String())
	// Both runs in one namespace: the tmpfs lives as long as the shell.
	script := strings.Join([]string{
		"mount -t tmpfs -o size=3m tmpfs " + target + " || exit 97",
		run + "; echo \"first-exit=$?\"",
		"echo '=== log'",
		"cat " + target + "/working-dir/logs/*.log",
		"echo '=== grown'",
		"mount -o remount,size=64m " + target + " || exit 98",
		run + "; echo \"second-exit=$?\"",
	}, "\n")
	out, err := smallDiskShell(t, script)
	if err != nil {
		t.Fatalf("shell: %v\n%s", err, out)
	}
	first, rest, ok1 := strings.Cut(out, "=== log")
	runLog, second, ok2 := strings.Cut(rest, "=== grown")
	if !ok1 || !ok2 {
		t.Fatalf("no run log or no second run:\n%s", out)
	}
	t.Logf("first run:\n%s", first)
	if !strings.Contains(first, "first-exit=") || strings.Contains(first, "first-exit=0") {
		t.Fatalf("the run on a full disk did not fail:\n%s", first)
	}
	headline := lastErrorLine(first)
	if !strings.Contains(headline, "disk is full") {
		t.Errorf("the headline does not say the disk is full: %q", headline)
	}
	if !strings.Contains(first, "free space") {
		t.Errorf("the first run does not say to free space:\n%s", first)
	}
	for _, wrong := range []string{"fix or block", "panic", "goroutine "} {
		if strings.Contains(first, wrong) {
			t.Errorf("the first run says %q:\n%s", wrong, first)
		}
	}
	// Each image's failure is one short line on the console (as it happens
	// and in the summary); the error's detail is in the run log, once.
	for _, l := range strings.Split(first, "\n") {
		if strings.Contains(l, "no space left") && !strings.Contains(l, "the disk is full") {
			t.Errorf("a console line gives the detail, not the short reason: %s", l)
		}
	}
	if n := strings.Count(runLog, transfer.DetailKey+"="); n < 1 || n > 4 {
		t.Errorf("the run log holds %d detailed errors, want one per failed image:\n%s", n, runLog)
	}
	fetchedFirst := counter.Bytes()
	if fetchedFirst == 0 {
		t.Fatalf("nothing was fetched by the first run")
	}

	t.Logf("second run:\n%s", second)
	if !strings.Contains(second, "second-exit=0") {
		t.Fatalf("the run after the disk grew did not finish:\n%s", second)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatal(err)
	}
	total, again := int64(4*layer), counter.Bytes()-fetchedFirst
	if again >= total {
		t.Errorf("the second run fetched %d blob bytes, the whole %d again: what the first one staged was not kept", again, total)
	}
}

// lastErrorLine is the last line of out that starts with "error" (the
// headline a failed run ends with), or the last non-empty line.
func lastErrorLine(out string) string {
	var last string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "first-exit=") {
			continue
		}
		last = l
		if strings.HasPrefix(strings.ToLower(l), "error") {
			return l
		}
	}
	return last
}
