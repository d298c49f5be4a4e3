package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/pipeline"
)

// Archive runs again: incremental archives, the same target directory, a
// subset of an archive loaded.

func TestIncrementalArchive(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir1, dir2 := t.TempDir(), t.TempDir()
	ws := t.TempDir()
	// The state file lives in the working dir of the first archive; the second run
	// uses --since-archive to say what the other side already has.
	o := opts(e.config(t, "    - name: baz"))
	o.Destination.Location = location.File(dir1)
	res1, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	o2 := opts(e.config(t, "    - name: baz\n    - name: bar"))
	o2.Destination.Location = location.File(dir2)
	o2.Archive.SinceArchive = location.File(dir1)
	res2, err := pipeline.Mirror(context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Archive == nil || !res2.Archive.Incremental {
		t.Fatalf("second archive is not incremental: %+v", res2.Archive)
	}
	a1, err := archive.Open(res1.Archive.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close()
	shipped := map[string]bool{}
	for _, b := range a1.ArchiveManifest().Blobs {
		shipped[b.Digest.String()] = true
	}
	a2, err := archive.Open(res2.Archive.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	manifestsInA2 := map[string]bool{}
	for _, tg := range a2.Tags() {
		manifestsInA2[tg.Digest.String()] = true
	}
	for _, b := range a2.ArchiveManifest().Blobs {
		if shipped[b.Digest.String()] && !manifestsInA2[b.Digest.String()] {
			t.Errorf("incremental archive ships blob %s again", b.Digest)
		}
	}

	// Disk-to-mirror of the incremental archive into a registry that lacks the base
	// fails and names what is missing.
	dst := registrytest.Start(t)
	o3 := opts(o2.ConfigPath)
	o3.Archive.From = location.File(dir2)
	o3.Workspace = location.File(ws)
	o3.Destination.Location = location.Docker(dst.Host() + "/airgap")
	if _, err := pipeline.Mirror(context.Background(), o3); !errors.Is(err, archive.ErrBaseMissing) {
		t.Fatalf("disk-to-mirror of an incremental archive without its base: %v, want ErrBaseMissing", err)
	}
	// After the first archive is pushed, the second one completes.
	o4 := opts(o.ConfigPath)
	o4.Archive.From = location.File(dir1)
	o4.Workspace = location.File(ws)
	o4.Destination.Location = o3.Destination.Location
	if _, err := pipeline.Mirror(context.Background(), o4); err != nil {
		t.Fatal(err)
	}
	res5, err := pipeline.Mirror(context.Background(), o3)
	if err != nil {
		t.Fatal(err)
	}
	checkMirrored(t, res5, dst)
}

// TestMirrorToDiskAgainSameDir: the workspace state makes the next mirror-to-disk
// (with something new) into the same directory incremental (the earlier archive was carried across);
// --full writes a complete one again.
func TestMirrorToDiskAgainSameDir(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	bazOnly := e.config(t, "    - name: baz")
	o := opts(bazOnly)
	o.Destination.Location = location.File(dir)
	first, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// (With nothing new the run writes no batch: TestFromTargetLoadsEveryBatch.)
	o.ConfigPath = e.config(t, "    - name: baz\n    - name: bar")
	second, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Archive.Incremental || second.Archive.Blobs >= first.Archive.Blobs {
		t.Fatalf("second archive should ship only what is new: %+v, first: %+v", second.Archive, first.Archive)
	}
	o.Archive.Full, o.ConfigPath = true, bazOnly
	third, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if third.Archive.Incremental || third.Archive.Blobs != first.Archive.Blobs {
		t.Fatalf("--full archive: %+v, first: %+v", third.Archive, first.Archive)
	}
	for i, res := range []*pipeline.Result{first, second, third} {
		if want := filepath.Join(dir, archive.BatchName(i+1)); res.Archive.Dir != want || res.Archive.Batch != i+1 {
			t.Errorf("run %d wrote %s (batch %d), want %s", i+1, res.Archive.Dir, res.Archive.Batch, want)
		}
		if _, err := archive.Verify(context.Background(), res.Archive.Dir); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiskToMirrorSubset: disk-to-mirror may name a subset of the archive (a
// catalog and fewer additional images) but not packages the archive lacks.
func TestDiskToMirrorSubset(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	o := opts(e.config(t, "    - name: baz"))
	o.Destination.Location = location.File(dir)
	if _, err := pipeline.Mirror(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	dst := registrytest.Start(t)
	// Asking for a package the archived catalog does not hold is an error naming it.
	o2 := opts(e.config(t, "    - name: foo"))
	o2.Archive.From = location.File(dir)
	o2.Workspace = location.File(t.TempDir())
	o2.Destination.Location = location.Docker(dst.Host() + "/airgap")
	_, err := pipeline.Mirror(context.Background(), o2)
	if err == nil || !strings.Contains(err.Error(), "package foo") {
		t.Fatalf("disk-to-mirror of a package the archive lacks: %v", err)
	}
	// The same catalog without the additional image is a subset: fine.
	cfg := fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: %s\n    packages:\n    - name: baz\n", e.seeded.Catalog)
	p := filepath.Join(t.TempDir(), "subset.yaml")
	os.WriteFile(p, []byte(cfg), 0o644)
	o3 := opts(p)
	o3.Archive.From = location.File(dir)
	o3.Workspace = location.File(t.TempDir())
	o3.Destination.Location = o2.Destination.Location
	res, err := pipeline.Mirror(context.Background(), o3)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range res.Plan.Images {
		if im.Source == e.extra {
			t.Errorf("the additional image was pushed although the configuration does not name it")
		}
	}
	checkMirrored(t, res, dst)
}
