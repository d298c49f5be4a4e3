package fbc

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// copyFiles writes the files of the folder src into dst one by one, calling
// added after each.
func copyFiles(t *testing.T, src, dst string, added func(rel string)) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		added(filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rendered is the catalog written to a folder, file by file, for comparison.
func rendered(t *testing.T, c *Catalog) map[string]string {
	t.Helper()
	dir := t.TempDir()
	if err := Write(context.Background(), c, dir, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return err
	})
	return out
}

// TestPrefetch loads a catalog written file by file while a prefetcher parses
// it, then moved to its final folder (as an extraction does), and checks the
// result against LoadDir of the same folder: files replaced, removed or
// ignored after they were parsed, a file that was broken when parsed and fixed
// later, and files never announced.
func TestPrefetch(t *testing.T) {
	ctx := context.Background()
	for _, elide := range []bool{true, false} {
		tmp := filepath.Join(t.TempDir(), "extracting")
		final := filepath.Join(t.TempDir(), "configs")
		p := NewPrefetch(ctx, LoadOptions{ElideHeavy: elide})
		add := func(rel string) { p.Add(tmp, rel) }
		copyFiles(t, filepath.Join("..", "testdata", "demo", "catalog"), tmp, add)
		copyFiles(t, filepath.Join("validate", "testdata", "valid", "edge-cases"), filepath.Join(tmp, "edge"), func(rel string) { add("edge/" + rel) })
		write := func(rel, content string, announce bool) {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, rel)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, rel), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if announce {
				add(rel)
			}
		}
		// Parsed, then replaced by other content (another size).
		write("late/replaced.json", `{"schema":"olm.package","name":"replaced-old"}`, true)
		// Parsed with an error, then fixed: Load parses it again.
		write("late/fixed.json", `{"schema":"olm.package","name":`, true)
		// Parsed, then removed.
		write("late/removed.json", `{"schema":"olm.package","name":"removed"}`, true)
		// Broken, and ignored by an .indexignore that comes last.
		write("late/ignored.json", `{not json`, true)
		// Never announced.
		write("late/silent.json", `{"schema":"olm.package","name":"silent"}`, false)
		waitIdle(t, p)
		write("late/replaced.json", `{"schema":"olm.package","name":"replaced-new","defaultChannel":"x"}`, false)
		write("late/fixed.json", `{"schema":"olm.package","name":"fixed"}`, false)
		if err := os.Remove(filepath.Join(tmp, "late", "removed.json")); err != nil {
			t.Fatal(err)
		}
		write("late/.indexignore", "ignored.json\n", true)
		if err := os.Rename(tmp, final); err != nil {
			t.Fatal(err)
		}
		got, err := p.Load(ctx, final)
		if err != nil {
			t.Fatalf("elide %v: %v", elide, err)
		}
		if p.reused < 5 {
			t.Errorf("elide %v: only %d files taken from the prefetch", elide, p.reused)
		}
		want, err := LoadDir(ctx, final, LoadOptions{ElideHeavy: elide})
		if err != nil {
			t.Fatal(err)
		}
		g, w := rendered(t, got), rendered(t, want)
		if len(g) != len(w) {
			t.Fatalf("elide %v: %d files written, want %d", elide, len(g), len(w))
		}
		for name, wb := range w {
			if g[name] != wb {
				t.Errorf("elide %v: %s differs:\n%s\n--- want\n%s", elide, name, g[name], wb)
			}
		}
		var names []string
		for _, pk := range got.Packages {
			names = append(names, pk.Name)
		}
		joined := strings.Join(names, ",")
		for _, must := range []string{"replaced-new", "fixed", "silent", "demo-operator"} {
			if !strings.Contains(joined, must) {
				t.Errorf("elide %v: package %s missing: %s", elide, must, joined)
			}
		}
		for _, mustNot := range []string{"replaced-old", "removed"} {
			if strings.Contains(joined, mustNot) {
				t.Errorf("elide %v: stale package %s loaded: %s", elide, mustNot, joined)
			}
		}
	}
}

// waitIdle waits until the prefetcher has taken every queued file.
func waitIdle(t *testing.T, p *Prefetch) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		p.mu.Lock()
		n := len(p.queue)
		p.mu.Unlock()
		if n == 0 {
			// The last file taken may still be parsing: a file replaced while
			// it is parsed is also caught by the size and time check.
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the prefetcher did not take its queue")
}

// TestPrefetchLoadError: a file that is broken for good is reported by Load
// with its final path, as LoadDir reports it.
func TestPrefetchLoadError(t *testing.T) {
	ctx := context.Background()
	tmp := filepath.Join(t.TempDir(), "x")
	final := filepath.Join(t.TempDir(), "configs")
	p := NewPrefetch(ctx, LoadOptions{ElideHeavy: true})
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "bad.json"), []byte("{\"schema\":\"olm.package\",\n\"name\": }"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Add(tmp, "bad.json")
	waitIdle(t, p)
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	_, err := p.Load(ctx, final)
	_, want := LoadDir(ctx, final, LoadOptions{ElideHeavy: true})
	if err == nil || want == nil || err.Error() != want.Error() || !strings.Contains(err.Error(), filepath.Join(final, "bad.json")) {
		t.Fatalf("Load: %v\nLoadDir: %v", err, want)
	}
	// A prefetcher whose catalog is not loaded stops on Close.
	p2 := NewPrefetch(ctx, LoadOptions{})
	p2.Add(final, "bad.json")
	p2.Close()
}

// After Forget, nothing parsed before counts: an extraction that started over
// rewrites every file, and a stale parse must never stand in for one.
func TestPrefetchForget(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := NewPrefetch(ctx, LoadOptions{})
	copyFiles(t, filepath.Join("..", "testdata", "demo", "catalog"), dir, func(rel string) { p.Add(dir, rel) })
	waitIdle(t, p)
	p.Forget()
	if _, err := p.Load(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if p.reused != 0 {
		t.Errorf("%d files taken from the prefetch after Forget, want 0", p.reused)
	}
}
