package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/syncbuf"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestCatalogMemo checks that a re-run with the same catalog digest and the same
// selection reuses the pruned catalog (no load, no prune) and plans exactly what
// a run that derives it plans; and that a different selection, a rebuilt image
// missing a blob, or a memo made for other inputs are not reused.
func TestCatalogMemo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	ws := t.TempDir()
	run := func(t *testing.T, cfg string) (*pipeline.Result, string, map[string][]byte) {
		t.Helper()
		var logs syncbuf.Buffer
		o := opts(cfg)
		o.Workspace = location.File(ws)
		o.Destination.Location = location.Docker(dst.Host() + "/mirror")
		o.Run.DryRun = true
		o.Output.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, f := range []string{"plan.json", "mapping.txt", filepath.Join("dry-run", "missing.txt")} {
			b, err := os.ReadFile(filepath.Join(res.WorkingDir, f))
			if err != nil {
				t.Fatal(err)
			}
			files[f] = b
		}
		// The report's catalog entries (made by the stage, or read from the
		// memo while the run plans).
		b, err := os.ReadFile(filepath.Join(res.WorkingDir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Catalogs json.RawMessage `json:"catalogs"`
		}
		if err := json.Unmarshal(b, &rep); err != nil || len(rep.Catalogs) < 10 {
			t.Fatalf("report.json's catalogs: %s, %v", rep.Catalogs, err)
		}
		files["report.json catalogs"] = rep.Catalogs
		return res, logs.String(), files
	}
	reused := func(logs string) bool { return strings.Contains(logs, "reusing its pruned catalog") }
	memos := func() []string {
		var out []string
		_ = filepath.WalkDir(filepath.Join(ws, "working-dir", "operator-catalogs"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "catalog-memo.json" {
				out = append(out, p)
			}
			return nil
		})
		return out
	}

	full := filepath.Join(t.TempDir(), "full.yaml")
	if err := os.WriteFile(full, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: "+e.seeded.Catalog+"\n    full: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sel := range []struct{ name, cfg string }{
		{"packages", e.config(t, "    - name: foo\n    - name: baz")},
		{"channel range", e.config(t, "    - name: bar\n      channels:\n      - name: stable\n        minVersion: 0.0.1")},
		{"full catalog", full},
	} {
		t.Run(sel.name, func(t *testing.T) {
			cfg := sel.cfg
			first, logs, files := run(t, cfg)
			if reused(logs) {
				t.Fatal("the first run reused a memo")
			}
			if len(memos()) == 0 {
				t.Fatal("no memo written")
			}
			second, logs, files2 := run(t, cfg)
			if !reused(logs) {
				t.Fatalf("the second run did not reuse the memo:\n%s", logs)
			}
			for f, b := range files {
				if !bytes.Equal(b, files2[f]) {
					t.Errorf("%s differs between the derived and the reused catalog:\n%s\n---\n%s", f, b, files2[f])
				}
			}
			if strings.Join(first.Warnings, "\n") != strings.Join(second.Warnings, "\n") {
				t.Errorf("warnings differ:\n%q\n%q", first.Warnings, second.Warnings)
			}
			if len(first.Catalogs) != 1 || len(second.Catalogs) != 1 || first.Catalogs[0].Digest != second.Catalogs[0].Digest {
				t.Errorf("catalogs differ: %+v / %+v", first.Catalogs, second.Catalogs)
			}
		})
	}

	t.Run("not reused", func(t *testing.T) {
		cfg := e.config(t, "    - name: baz")
		first, _, files := run(t, cfg)
		var memo string
		for _, m := range memos() {
			if b, _ := os.ReadFile(m); len(b) > 0 && strings.Contains(string(b), "\"baz\"") && !strings.Contains(string(b), "\"foo\"") {
				memo = m
			}
		}
		if memo == "" {
			t.Fatal("no memo for the baz selection")
		}
		// A blob of the rebuilt image is gone: rebuilt, not reused.
		blobs, _ := filepath.Glob(filepath.Join(filepath.Dir(memo), "image", "blobs", "sha256", "*"))
		var biggest string
		var size int64
		for _, b := range blobs {
			if st, err := os.Stat(b); err == nil && st.Size() > size {
				biggest, size = b, st.Size()
			}
		}
		if err := os.Remove(biggest); err != nil {
			t.Fatal(err)
		}
		res, logs, files2 := run(t, cfg)
		if reused(logs) || !strings.Contains(logs, "no usable catalog memo") {
			t.Fatalf("a memo whose image lost a blob was reused:\n%s", logs)
		}
		if !bytes.Equal(files["plan.json"], files2["plan.json"]) || res.Catalogs[0].Digest != first.Catalogs[0].Digest {
			t.Error("the rebuilt run planned something else")
		}
		// A memo made for other inputs (another catalog digest or build).
		b, err := os.ReadFile(memo)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte(`"key":"`), []byte(`"key":"0`), 1)
		if err := os.WriteFile(memo, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, logs, _ := run(t, cfg); reused(logs) {
			t.Fatal("a memo made for other inputs was reused")
		}
		if _, logs, _ := run(t, cfg); !reused(logs) {
			t.Fatalf("the memo rewritten by the last run was not reused:\n%s", logs)
		}
		// What only the records use is decoded while the run plans: a memo
		// whose planning part is sound but not the rest fails the run with
		// an error naming it and what to do.
		if b, err = os.ReadFile(memo); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"wants":{`)) {
			t.Fatalf("no wants in the memo: %s", b)
		}
		if err := os.WriteFile(memo, bytes.Replace(b, []byte(`"wants":{`), []byte(`"wants":{"x":5,`), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		o := opts(cfg)
		o.Workspace = location.File(ws)
		o.Destination.Location = location.Docker(dst.Host() + "/mirror")
		o.Run.DryRun = true
		_, err = pipeline.Mirror(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), memo) || !strings.Contains(err.Error(), "it was removed; run again") {
			t.Fatalf("a memo whose records part is broken: %v, want an error naming %s and what to do", err, memo)
		}
		if _, err := os.Stat(memo); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the broken memo is still there: %v", err)
		}
		// Run again, as the error says: the catalog is pruned anew.
		if _, err := pipeline.Mirror(context.Background(), o); err != nil {
			t.Fatalf("the run after a broken memo was removed: %v", err)
		}
	})
}
