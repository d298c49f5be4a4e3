package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestMirrorToDiskRefusesWithoutSpace: a mirror-to-disk whose plan needs more
// than the target's filesystem has free (reported as 64 KiB: the plan's four
// 64 KiB layers do not fit) is refused before any layer is fetched from the
// source (Debian's docker-registry: what is fetched while planning stays
// within half the free space), with the numbers, the folder and
// --skip-space-check in the message, and no batch is written; with
// --skip-space-check the same run writes the batch.
func TestMirrorToDiskRefusesWithoutSpace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := registrytest.StartKind(t, registrytest.Distribution28)
	var lines []string
	for i := range 4 {
		imagetest.MustPush(t, fmt.Sprintf("%s/apps/a%d:1.0", src.Host, i), fakeimage.Spec{Seed: uint64(980 + i), Layers: 1, LayerSize: 64 << 10})
	}
	counter := registrytest.NewBlobCounter(t, src.Host)
	for i := range 4 {
		lines = append(lines, fmt.Sprintf("  - name: %s/apps/a%d:1.0", counter.Host(), i))
	}
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(lines, "\n")+"\n")
	target := t.TempDir()
	var asked atomic.Value
	o := opts(cfg)
	o.Destination.Location = location.File(target)
	pipeline.SetFreeSpace(&o, func(path string) (int64, error) {
		asked.Store(path)
		return 64 << 10, nil
	})

	_, err := pipeline.Mirror(ctx, o)
	if !errors.Is(err, archive.ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	for _, want := range []string{"64.0 KiB", "--skip-space-check", filepath.Join(target, "batch-0001"), "needs "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if p, _ := asked.Load().(string); !strings.HasPrefix(p, target) {
		t.Errorf("free space asked of %q, not of the target %s", p, target)
	}
	// Only what fits in half the free space may be fetched ahead of the
	// check (the configs, not a layer).
	if n := counter.Bytes(); n > 32<<10 {
		t.Errorf("%d blob bytes fetched before the refusal, want at most half the free space", n)
	}
	if _, err := os.Stat(filepath.Join(target, "batch-0001", "airlock_000001.tar")); err == nil {
		t.Errorf("a chunk was written")
	}

	o.Archive.SkipSpaceCheck = true
	res, err := pipeline.Mirror(ctx, o)
	if err != nil || res.Archive == nil {
		t.Fatalf("with --skip-space-check: %v", err)
	}
	if counter.Bytes() < 4*64<<10 {
		t.Errorf("%d blob bytes fetched with --skip-space-check, want the four layers", counter.Bytes())
	}
}
