// Package legacytest checks, for tests, that pruning a SQLite index database
// directly (pipeline.PruneLocal, which converts only the bundles it keeps)
// gives what converting it whole (legacy.ConvertSQLite) and pruning the result
// (pipeline.PruneDir) gives: the same files, byte for byte, the same
// explanation, or the same refusal. The caller passes the two ways in as a
// Prune: nothing under internal imports pipeline.
package legacytest

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/prune"
)

// Prune prunes with the ImageSetConfiguration config into out: the file-based
// catalog dir (db converted whole) when dir is set (pipeline.PruneDir), else
// the SQLite database db directly (pipeline.PruneLocal).
type Prune func(ctx context.Context, config, db, dir, out string) (*prune.Explanation, error)

// ComparePrune prunes the database db with the ImageSetConfiguration config
// both ways and fails t when the results differ. It returns the number of
// bundles kept (-1 when both ways refuse).
func ComparePrune(t testing.TB, db, config string, pruneWith Prune) int {
	t.Helper()
	ctx := context.Background()
	tmp := t.TempDir()
	converted := filepath.Join(tmp, "converted")
	whole, direct := filepath.Join(tmp, "whole"), filepath.Join(tmp, "direct")
	if _, err := legacy.ConvertSQLite(ctx, db, converted, legacy.SQLiteOptions{}); err != nil {
		t.Fatalf("converting %s: %v", db, err)
	}
	want, werr := pruneWith(ctx, config, db, converted, whole)
	got, gerr := pruneWith(ctx, config, db, "", direct)
	if (werr != nil) != (gerr != nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("pruning %s with %s:\nconverted whole: %v\ndirectly:        %v", db, config, werr, gerr)
	}
	if werr != nil {
		t.Logf("both refuse: %v", werr)
		return -1
	}
	var we, ge bytes.Buffer
	if err := want.WriteText(&we); err != nil {
		t.Fatal(err)
	}
	if err := got.WriteText(&ge); err != nil {
		t.Fatal(err)
	}
	if we.String() != ge.String() {
		t.Errorf("explanations differ:\nconverted whole:\n%s\ndirectly:\n%s", we.String(), ge.String())
	}
	wf, gf := files(t, whole), files(t, direct)
	for name, w := range wf {
		g, ok := gf[name]
		switch {
		case !ok:
			t.Errorf("%s: written when converted whole, not directly", name)
		case !bytes.Equal(w, g):
			t.Errorf("%s differs (%d bytes converted whole, %d directly)", name, len(w), len(g))
		}
	}
	for name := range gf {
		if _, ok := wf[name]; !ok {
			t.Errorf("%s: written directly, not when converted whole", name)
		}
	}
	_, _, bundles := got.Counts()
	return bundles
}

// files reads every file under dir, by slash-separated relative path.
func files(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
