package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
)

// treeState lists every file and folder under dir with its size, mode and
// modification time, to prove that nothing was written.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		lines = append(lines, fmt.Sprintf("%s %d %s %d", rel, info.Size(), info.Mode(), info.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestBatchSequence: three mirror-to-disk runs into one target write batch-0001,
// batch-0002 and batch-0003 without touching the earlier ones; loaded in order
// into an empty registry from a read-only folder they complete; out of order is a
// clear error naming the batch to load first, and an older batch after a newer
// one is refused.
func TestBatchSequence(t *testing.T) {
	t.Parallel()
	e := setup(t)
	target := t.TempDir()
	cfgs := []string{
		e.config(t, "    - name: baz"),
		e.config(t, "    - name: baz\n    - name: bar"),
		e.config(t, "    - name: baz\n    - name: bar\n    - name: foo"),
	}
	var results []*pipeline.Result
	var before []string
	for i, cfg := range cfgs {
		o := opts(cfg)
		o.Destination.Location = location.File(target)
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		want := filepath.Join(target, archive.BatchName(i+1))
		if res.Archive.Dir != want || res.Archive.Batch != i+1 || len(res.Archive.BuildsOn) != i {
			t.Fatalf("run %d: batch %d in %s building on %v; want batch %d in %s", i+1, res.Archive.Batch, res.Archive.Dir, res.Archive.BuildsOn, i+1, want)
		}
		// The batches written before are untouched.
		for j, b := range before {
			if got := treeState(t, filepath.Join(target, archive.BatchName(j+1))); got != b {
				t.Errorf("run %d changed %s:\n%s\nwas:\n%s", i+1, archive.BatchName(j+1), got, b)
			}
		}
		before = append(before, treeState(t, want))
		results = append(results, res)
	}
	e.src.Stop()

	// The carried media are read-only.
	if err := filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(p, map[bool]os.FileMode{true: 0o555, false: 0o444}[d.IsDir()])
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	frozen := treeState(t, target)

	load := func(dst *registrytest.Registry, ws string, batch int, cfg string) (*pipeline.Result, error) {
		o := opts(cfg)
		o.Archive.From = location.File(filepath.Join(target, archive.BatchName(batch)))
		o.Workspace = location.File(ws)
		o.Destination.Location = location.Docker(dst.Host() + "/airgap")
		return pipeline.Mirror(context.Background(), o)
	}

	// In order, into an empty registry.
	dst := registrytest.Start(t)
	ws := t.TempDir()
	var last *pipeline.Result
	for i, cfg := range cfgs {
		res, err := load(dst, ws, i+1, cfg)
		if err != nil {
			t.Fatalf("load batch %d: %v", i+1, err)
		}
		last = res
	}
	checkMirrored(t, last, dst)
	if got := treeState(t, target); got != frozen {
		t.Errorf("disk-to-mirror wrote into the archive folder:\n%s\nwas:\n%s", got, frozen)
	}
	// Loading an older batch after the newer one is refused.
	_, err := load(dst, ws, 2, cfgs[1])
	if err == nil || !strings.Contains(err.Error(), "batch-0002") || !strings.Contains(err.Error(), "older than batch-0003") {
		t.Errorf("loading batch 2 after batch 3: %v", err)
	}

	// Asking batch 3 for less (baz only) re-prunes its catalog, whose layers
	// batches 1 and 2 shipped: they are read from the destination.
	narrow, err := load(dst, ws, 3, cfgs[0])
	if err != nil {
		t.Fatalf("narrower configuration on an incremental batch: %v", err)
	}
	if len(narrow.Repruned) != 1 || narrow.Catalogs[0].Digest == last.Catalogs[0].Digest || len(narrow.Plan.Images) >= len(last.Plan.Images) {
		t.Errorf("narrowed load: repruned %v, catalog %s (was %s), %d images (was %d)", narrow.Repruned, narrow.Catalogs[0].Digest, last.Catalogs[0].Digest, len(narrow.Plan.Images), len(last.Plan.Images))
	}
	checkMirrored(t, narrow, dst)

	// Out of order: batch 1 then batch 3 into another empty registry.
	dst2 := registrytest.Start(t)
	ws2 := t.TempDir()
	if _, err := load(dst2, ws2, 1, cfgs[0]); err != nil {
		t.Fatal(err)
	}
	_, err = load(dst2, ws2, 3, cfgs[2])
	if !errors.Is(err, archive.ErrBaseMissing) || !strings.Contains(err.Error(), "batch-0002 (archive "+results[1].Archive.ArchiveID) || strings.Contains(err.Error(), "batch-0001 (") {
		t.Fatalf("loading batch 3 without batch 2: %v", err)
	}
	t.Logf("out of order: %v", err)
	if got := treeState(t, target); got != frozen {
		t.Errorf("disk-to-mirror wrote into the archive folder")
	}
}

// TestMirrorToDiskResumesUnfinishedBatch: a run that fails leaves its batch
// unfinished; the next run finishes that batch instead of starting another.
func TestMirrorToDiskResumesUnfinishedBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	target := t.TempDir()
	o := opts(e.config(t, "    - name: baz"))
	o.Destination.Location = location.File(target)
	ctx, cancel := context.WithCancel(context.Background())
	o.Output.Progress = func(ev pipeline.Progress) {
		if ev.BytesDone > 0 {
			cancel()
		}
	}
	if _, err := pipeline.Mirror(ctx, o); err == nil {
		t.Fatal("interrupted run succeeded")
	}
	bs, err := archive.Batches(target)
	if err != nil || len(bs) != 1 || bs[0].Finished {
		t.Fatalf("after the interruption: %+v, %v", bs, err)
	}
	o.Output.Progress = nil
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Archive.Batch != 1 || !res.Archive.Resumed || res.Archive.Incremental {
		t.Errorf("resumed run: %+v", res.Archive)
	}
}

// foo's channel beta holds 0.1.0, 0.2.0, 0.3.0 and 0.3.1 (0.3.x replace 0.2.0).
func fooConfig(t *testing.T, e *env, rng string) string {
	return e.config(t, "    - name: foo\n      channels:\n      - name: beta\n"+rng)
}

// TestDiskToMirrorWidenedConfig: a disk-to-mirror configuration that asks for
// more than the archive's selection is an error listing exactly what is missing
// and the configuration the archive was made with.
func TestDiskToMirrorWidenedConfig(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	o := opts(fooConfig(t, e, "        minVersion: 0.3.0\n"))
	o.Destination.Location = location.File(dir)
	if _, err := pipeline.Mirror(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	dst := registrytest.Start(t)
	for _, tc := range []struct {
		name, packages string
		full           bool
		want           []string
	}{
		{"lower minVersion", "    - name: foo\n      channels:\n      - name: beta\n        minVersion: 0.1.0\n",
			false, []string{"package foo channel beta: versions 0.1.0 to the channel head; the archive holds versions 0.3.0 to the channel head"}},
		{"another package", "    - name: foo\n      channels:\n      - name: beta\n        minVersion: 0.3.0\n    - name: baz\n",
			false, []string{"package baz (not in the archive's selection)"}},
		{"every channel", "    - name: foo\n      minVersion: 0.3.0\n",
			false, []string{"package foo: every channel; the archive holds channels beta"}},
		{"full", "    - name: foo\n      channels:\n      - name: beta\n", true,
			[]string{"package foo: every version (full: true)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := e.config(t, tc.packages)
			if tc.full {
				b, _ := os.ReadFile(cfg)
				os.WriteFile(cfg, []byte(strings.Replace(string(b), "    packages:\n", "    full: true\n    packages:\n", 1)), 0o644)
			}
			o2 := opts(cfg)
			o2.Archive.From = location.File(dir)
			o2.Workspace = location.File(t.TempDir())
			o2.Destination.Location = location.Docker(dst.Host() + "/airgap")
			_, err := pipeline.Mirror(context.Background(), o2)
			if err == nil {
				t.Fatal("a wider configuration was accepted")
			}
			for _, w := range append(tc.want, "minVersion: 0.3.0", "was made with this configuration") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			if c := dst.Counts(); c.UploadPOST+c.ManifestPUT != 0 {
				t.Errorf("something was pushed: %+v", c)
			}
		})
	}
}

// TestDiskToMirrorNarrowedConfig: a configuration that asks for less than the
// archive pushes a catalog pruned again to it, only its images, and cluster
// resources naming that catalog.
func TestDiskToMirrorNarrowedConfig(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	o := opts(fooConfig(t, e, "        minVersion: 0.3.0\n"))
	o.Destination.Location = location.File(dir)
	wide, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	e.src.Stop()
	dst := registrytest.Start(t)
	o2 := opts(fooConfig(t, e, "        minVersion: 0.3.1\n        maxVersion: 0.3.1\n"))
	o2.Archive.From = location.File(dir)
	o2.Workspace = location.File(t.TempDir())
	o2.Destination.Location = location.Docker(dst.Host() + "/airgap")
	res, err := pipeline.Mirror(context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	checkMirrored(t, res, dst)
	if res.Catalogs[0].Digest == wide.Catalogs[0].Digest {
		t.Fatalf("the archived catalog was pushed unchanged")
	}
	c := res.Catalogs[0]
	fc, err := catalogimage.Fetch(context.Background(), c.DestRepo+":"+c.Tag, t.TempDir(), catalogimage.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := fbc.LoadDir(context.Background(), fc.ConfigsDir, fbc.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var bundles []string
	for _, p := range cat.Packages {
		for _, b := range p.Bundles {
			bundles = append(bundles, b.Name)
		}
	}
	if strings.Contains(strings.Join(bundles, " "), "foo.v0.3.0") || !strings.Contains(strings.Join(bundles, " "), "foo.v0.3.1") {
		t.Errorf("pushed catalog holds %v, want foo.v0.3.1 without foo.v0.3.0", bundles)
	}
	if len(res.Plan.Images) >= len(wide.Plan.Images) {
		t.Errorf("pushed %d images, the wider archive has %d", len(res.Plan.Images), len(wide.Plan.Images))
	}
	var found bool
	for _, f := range res.ClusterResources {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), c.Digest.String()) || strings.Contains(string(b), c.DestRepo+":"+c.Tag) {
			found = true
		}
	}
	if !found {
		t.Errorf("no cluster resource names the re-pruned catalog %s:%s", c.DestRepo, c.Tag)
	}
}
