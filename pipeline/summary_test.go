package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// normalizer replaces what changes from run to run (registry addresses,
// temporary folders, the time in a pinned configuration's name, archive IDs)
// with stable words, keeping everything a person reads: sizes and digests stay,
// since the runs it is used for mirror deterministic content from a source named
// the same every time (setupStable). Archive IDs are masked because an
// incremental batch's ID hashes the folder its earlier batches were written to
// (BatchRef.Dir), a temporary folder here.
type normalizer struct{ pairs []string }

func (n *normalizer) add(old, new string) { n.pairs = append(n.pairs, old, new) }

var (
	idRE     = regexp.MustCompile(`archive (ID )?[0-9a-f]{32}`)
	pinnedRE = regexp.MustCompile(`isc_pinned_[0-9T-]+Z\.yaml`)
)

func (n *normalizer) apply(s string) string {
	s = strings.NewReplacer(n.pairs...).Replace(s)
	s = idRE.ReplaceAllString(s, "archive ID")
	return pinnedRE.ReplaceAllString(s, "isc_pinned_TIME.yaml")
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "summary", name+".golden")
	golden.Check(t, path, []byte(got))
}

// TestSummaries runs each outcome for real and compares the summary a person
// reads with a golden file: first run, no-op re-run, partial failure, total
// failure, dry run, incremental archive, interrupted run, and a disk-to-mirror.
// The content is the same on every run (setupStable), so the goldens hold the
// real sizes and digests.
func TestSummaries(t *testing.T) {
	t.Parallel()
	e := setupStable(t)
	n := &normalizer{}
	n.add(stableSource, "SOURCE")
	summary := func(res *pipeline.Result) string {
		var b bytes.Buffer
		if res == nil {
			return "(no result)\n"
		}
		res.WriteSummary(&b)
		return n.apply(b.String())
	}
	m2m := func(t *testing.T, cfg string, dst *registrytest.Registry, ws string) pipeline.Options {
		o := e.opts(cfg)
		o.Workspace = location.File(ws)
		o.Destination.Location = location.Docker(dst.Host() + "/mirror")
		return o
	}
	newDst := func(t *testing.T) *registrytest.Registry {
		dst := registrytest.Start(t)
		n.add(dst.Host(), "DEST")
		return dst
	}
	newDir := func(t *testing.T, word string) string {
		d := t.TempDir()
		n.add(d, word)
		return d
	}
	cfg := e.config(t, "    - name: baz")
	n.add(cfg, "CONFIG")

	t.Run("first-run-and-no-op", func(t *testing.T) {
		dst, ws := newDst(t), newDir(t, "WORKSPACE")
		o := m2m(t, cfg, dst, ws)
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "m2m-first-run", summary(res))
		res, err = pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "m2m-no-op-rerun", summary(res))
	})
	t.Run("dry-run", func(t *testing.T) {
		dst, ws := newDst(t), newDir(t, "WORKSPACE")
		o := m2m(t, cfg, dst, ws)
		o.Run.DryRun = true
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "m2m-dry-run", summary(res))
	})
	t.Run("partial-failure", func(t *testing.T) {
		dst, ws := newDst(t), newDir(t, "WORKSPACE")
		bad := writeCfg(t, fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: %s\n    packages:\n    - name: baz\n  additionalImages:\n  - name: %s/tools/absent:1.0\n", e.seeded.Catalog, stableSource))
		res, err := pipeline.Mirror(context.Background(), m2m(t, bad, dst, ws))
		if err == nil {
			t.Fatal("no error")
		}
		checkGolden(t, "m2m-partial-failure", summary(res))
	})
	t.Run("total-failure", func(t *testing.T) {
		dst, ws := newDst(t), newDir(t, "WORKSPACE")
		bad := writeCfg(t, fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: %s/tools/absent:1.0\n  - name: %s/tools/gone:2.0\n", stableSource, stableSource))
		res, err := pipeline.Mirror(context.Background(), m2m(t, bad, dst, ws))
		if err == nil {
			t.Fatal("no error")
		}
		if len(res.ClusterResources) != 0 {
			t.Errorf("cluster resources written although nothing was mirrored: %v", res.ClusterResources)
		}
		checkGolden(t, "m2m-total-failure", summary(res))
	})
	t.Run("interrupted", func(t *testing.T) {
		dst, ws := newDst(t), newDir(t, "WORKSPACE")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		o := m2m(t, cfg, dst, ws)
		o.Output.Stage = func(s string) {
			if s == "copy" {
				cancel()
			}
		}
		res, err := pipeline.Mirror(ctx, o)
		if err == nil {
			t.Fatal("no error")
		}
		// Blobs move while planning goes on (transfer.Prefetch): how many
		// were sent before the interruption depends on timing, so that line
		// is left out; no manifest may have been pushed.
		got := regexp.MustCompile(`(?m)^  blobs: .*\n`).ReplaceAllString(summary(res), "")
		checkGolden(t, "m2m-interrupted", got)
		if c := dst.Counts(); c.ManifestPUT != 0 {
			t.Errorf("interrupted before the copy: %d manifests pushed (%v)", c.ManifestPUT, c.ByPath)
		}
	})
	t.Run("archive-full-incremental-load", func(t *testing.T) {
		target := newDir(t, "TARGET")
		o := e.opts(cfg)
		o.Destination.Location = location.File(target)
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "m2d-first-batch", summary(res))
		o2 := e.opts(e.config(t, "    - name: baz\n    - name: bar"))
		n.add(o2.ConfigPath, "CONFIG2")
		o2.Destination.Location = location.File(target)
		res2, err := pipeline.Mirror(context.Background(), o2)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "m2d-incremental-batch", summary(res2))
		o3 := e.opts(o2.ConfigPath)
		o3.Destination.Location = location.File(target)
		o3.Run.DryRun = true
		res3, err := pipeline.Mirror(context.Background(), o3)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "m2d-dry-run", summary(res3))

		dst, ws := newDst(t), newDir(t, "WORKSPACE")
		for i, c := range []string{o.ConfigPath, o2.ConfigPath} {
			d := e.opts(c)
			d.Archive.From = location.File(filepath.Join(target, fmt.Sprintf("batch-%04d", i+1)))
			d.Workspace = location.File(ws)
			d.Destination.Location = location.Docker(dst.Host() + "/airgap")
			res, err := pipeline.Mirror(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, fmt.Sprintf("d2m-batch-%d", i+1), summary(res))
		}
	})
}
