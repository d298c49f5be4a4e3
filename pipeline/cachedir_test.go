package pipeline_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestCacheDirShared: with --cache-dir, two workspaces share one catalog cache:
// the second run finds the catalog extracted, and neither workspace keeps one.
func TestCacheDirShared(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := e.config(t, "    - name: baz")
	cache := t.TempDir()
	dst := registrytest.Start(t)
	for i, ws := range []string{t.TempDir(), t.TempDir()} {
		var logs bytes.Buffer
		o := opts(cfg)
		o.CacheDir = cache
		o.Workspace = location.File(ws)
		o.Destination.Location = location.Docker(dst.Host() + "/mirror")
		o.Output.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		if _, err := pipeline.Mirror(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(workspace.At(ws).OperatorCatalogsDir()); err == nil {
			t.Errorf("run %d: the workspace has its own catalog cache", i+1)
		}
		if got := strings.Contains(logs.String(), "catalog already extracted"); got != (i == 1) {
			t.Errorf("run %d: catalog already extracted = %v", i+1, got)
		}
	}
	if ents, err := os.ReadDir(workspace.CatalogCacheDir(cache)); err != nil || len(ents) == 0 {
		t.Fatalf("shared cache %s: %v", workspace.CatalogCacheDir(cache), err)
	}
}

// TestSinceDate: --since builds the next batch on the batches written before
// the date only, so it ships again what later batches carried.
func TestSinceDate(t *testing.T) {
	t.Parallel()
	e := setup(t)
	target := t.TempDir()
	run := func(cfg string, since time.Time) *pipeline.Result {
		t.Helper()
		o := opts(cfg)
		o.Destination.Location = location.File(target)
		o.Archive.Since = since
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	run(e.config(t, "    - name: baz"), time.Time{})
	cfg2 := e.config(t, "    - name: baz\n    - name: bar")
	incr := run(cfg2, time.Time{})
	if !incr.Archive.Incremental || incr.Archive.ReliesOn == 0 {
		t.Fatalf("second batch is not incremental: %+v", incr.Archive)
	}
	// Since a date after batch 1 and before batch 2 (both recorded now):
	// rewrite batch 2's time a day ahead to place the date between them.
	st, err := archive.LoadState(workspace.At(target).ArchiveStatePath())
	if err != nil {
		t.Fatal(err)
	}
	st.Archives[1].Time = st.Archives[1].Time.Add(48 * time.Hour)
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	since := run(cfg2, time.Now().Add(24*time.Hour))
	if len(since.Archive.BuildsOn) != 1 || since.Archive.BuildsOn[0].Batch != 1 {
		t.Errorf("--since between batch 1 and 2: builds on %v, want batch 1 only", since.Archive.BuildsOn)
	}
	if since.Archive.Blobs < incr.Archive.Blobs {
		t.Errorf("--since shipped %d blobs, fewer than batch 2's %d it must ship again", since.Archive.Blobs, incr.Archive.Blobs)
	}
	// Before every batch: a full batch.
	full := run(cfg2, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	if full.Archive.Incremental || len(full.Archive.BuildsOn) != 0 {
		t.Errorf("--since 2000-01-01: %+v, want a full batch", full.Archive)
	}
}
