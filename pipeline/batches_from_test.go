package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestFromTargetLoadsEveryBatch: three mirror-to-disk runs write three batches
// (a fourth with nothing new writes none); `--from file://TARGET` loads all
// three into an empty registry in order, in one command, real copies against
// the embedded registry. Run again, it loads only the newest again (nothing is
// sent). A target missing a batch is refused before anything is loaded, naming
// the batch; archive verify reads every batch and names the bad one.
func TestFromTargetLoadsEveryBatch(t *testing.T) {
	t.Parallel()
	e := setupStable(t)
	target := t.TempDir()
	n := &normalizer{}
	n.add(target, "TARGET")
	n.add(stableSource, "SOURCE")
	cfgs := []string{
		e.config(t, "    - name: baz"),
		e.config(t, "    - name: baz\n    - name: bar"),
		e.config(t, "    - name: baz\n    - name: bar\n    - name: foo"),
	}
	n.add(filepath.Dir(cfgs[0]), "CONFIGS")
	var ids []string
	for i, cfg := range cfgs {
		o := e.opts(cfg)
		o.Destination.Location = location.File(target)
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		ids = append(ids, res.Archive.ArchiveID)
	}

	// Nothing new: no batch-0004, and the summary says since which batch.
	o := e.opts(cfgs[2])
	o.Destination.Location = location.File(target)
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.NothingNew == nil || res.NothingNew.Batch != 3 || res.NothingNew.ArchiveID != ids[2] || res.Archive != nil {
		t.Fatalf("a run with nothing new: nothing new %+v, archive %+v", res.NothingNew, res.Archive)
	}
	if _, err := os.Stat(filepath.Join(target, archive.BatchName(4))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run with nothing new wrote %s (%v)", archive.BatchName(4), err)
	}
	var b bytes.Buffer
	res.WriteSummary(&b)
	checkGolden(t, "m2d-nothing-new", n.apply(b.String()))
	e.src.Stop()

	// archive verify TARGET: every batch, in order.
	vr, err := archive.VerifyTarget(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	if len(vr.Archives) != 3 || vr.Archives[0].Batch != 1 || vr.Archives[2].Report.ArchiveID != ids[2] || len(vr.Notes) != 0 {
		t.Errorf("verify target: %+v", vr)
	}

	load := func(dst *registrytest.Registry, ws, from string) (*pipeline.Result, error) {
		o := e.opts(cfgs[2])
		o.Archive.From = location.File(from)
		o.Workspace = location.File(ws)
		o.Destination.Location = location.Docker(dst.Host() + "/airgap")
		return pipeline.Mirror(context.Background(), o)
	}

	// A target whose batch-0002 was left behind: refused before anything is
	// loaded, naming the batch.
	partial := t.TempDir()
	if err := os.CopyFS(partial, os.DirFS(target)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(partial, archive.BatchName(2))); err != nil {
		t.Fatal(err)
	}
	empty := registrytest.Start(t)
	_, err = load(empty, t.TempDir(), partial)
	if !errors.Is(err, workspace.ErrBatchMissing) || !strings.Contains(err.Error(), "batch-0003 (archive "+ids[2]+") builds on batch-0002 (archive "+ids[1]+"), which "+partial+" does not hold") {
		t.Errorf("target without batch-0002: %v", err)
	}
	if c := empty.Counts(); c.ManifestPUT+c.UploadPOST+c.MountPOST != 0 {
		t.Errorf("target without batch-0002: something was pushed before the refusal: %+v", c)
	}

	// The whole target into an empty registry: one command.
	dst := registrytest.Start(t)
	ws := t.TempDir()
	n.add(dst.Host(), "DEST")
	n.add(ws, "WORKSPACE")
	res, err = load(dst, ws, target)
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches == nil || len(res.Batches.Done) != 2 || res.Batches.Done[0].Batch.ArchiveID != ids[0] || res.Batches.Done[1].Batch.ArchiveID != ids[1] {
		t.Fatalf("loaded before the newest: %+v", res.Batches)
	}
	for i, d := range res.Batches.Done {
		if d.Copied == 0 || d.Images == 0 {
			t.Errorf("batch %d: %+v", i+1, d)
		}
	}
	checkMirrored(t, res, dst)
	rec, err := workspace.ReadLoaded(workspace.At(ws))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, l := range rec.Batches {
		order = append(order, l.ArchiveID)
	}
	if strings.Join(order, " ") != strings.Join(ids, " ") {
		t.Errorf("loaded.json records %v, want %v in that order", order, ids)
	}
	b.Reset()
	res.WriteSummary(&b)
	checkGolden(t, "d2m-from-target", n.apply(b.String()))

	// Again: the earlier batches are known to be loaded; the newest is loaded
	// again and nothing is sent.
	res, err = load(dst, ws, target)
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches == nil || len(res.Batches.Loaded) != 2 || len(res.Batches.Done) != 0 || res.Counts().Copied != 0 || res.BlobsSent != 0 {
		t.Errorf("second load: batches %+v, counts %+v, %d blobs sent", res.Batches, res.Counts(), res.BlobsSent)
	}
	js, _ := json.Marshal(res.Batches)
	t.Logf("second load: %s", js)

	// Another workspace that loaded only batch-0003 (by name, into the registry
	// that has the earlier ones): batches 1 and 2 are older than what it
	// loaded, and are skipped rather than loaded over it.
	ws2 := t.TempDir()
	if _, err := load(dst, ws2, filepath.Join(target, archive.BatchName(3))); err != nil {
		t.Fatal(err)
	}
	res, err = load(dst, ws2, target)
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches == nil || len(res.Batches.Skipped) != 2 || res.Batches.Skipped[1].ArchiveID != ids[1] || len(res.Batches.Done) != 0 || res.Batches.Newest.ArchiveID != ids[2] {
		t.Errorf("a workspace that loaded batch-0003 only: %+v", res.Batches)
	}

	// A fresh workspace: loaded.json knows nothing, the registry holds batch
	// 3's catalogs at their tags, so batches 1 and 2 are not loaded again
	// (which would set the catalog tag back to their older catalogs).
	dst.Reset()
	res, err = load(dst, t.TempDir(), target)
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches == nil || len(res.Batches.AtDestination) != 2 || res.Batches.AtDestination[0].ArchiveID != ids[0] || len(res.Batches.Done) != 0 || res.Counts().Copied != 0 {
		t.Errorf("a fresh workspace against a registry holding every batch: %+v, %+v", res.Batches, res.Counts())
	}
	if c := dst.Counts(); c.ManifestPUT != 0 {
		t.Errorf("a fresh workspace against a registry holding every batch pushed %d manifests", c.ManifestPUT)
	}

	// A corrupt byte in a batch: verify names it.
	chunk := filepath.Join(partial, archive.BatchName(3), "airlock_000001.tar")
	bs, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	bs[len(bs)/2] ^= 0xff
	if err := os.WriteFile(chunk, bs, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.VerifyTarget(context.Background(), partial); err == nil || !strings.Contains(err.Error(), filepath.Join(partial, archive.BatchName(3))) {
		t.Errorf("verify of a corrupt batch: %v", err)
	}
}
