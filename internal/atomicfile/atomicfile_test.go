package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// leftovers lists what is in dir besides the names given.
func leftovers(t *testing.T, dir string, want ...string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]bool{}
	for _, w := range want {
		ok[w] = true
	}
	var extra []string
	for _, e := range ents {
		if !ok[e.Name()] {
			extra = append(extra, e.Name())
		}
	}
	return extra
}

func TestWriteFile(t *testing.T) {
	old := syscall.Umask(0o077) // a strict umask must not narrow the mode asked for
	defer syscall.Umask(old)
	tests := []struct {
		name     string
		existing *fs.FileMode // a file already at the path, with this mode
		perm     fs.FileMode
		wantPerm fs.FileMode
	}{
		{"new file, default mode", nil, 0, 0o644},
		{"new file, explicit 0644", nil, 0o644, 0o644},
		{"new secret", nil, 0o600, 0o600},
		{"replaces a secret with a public file", ptr(fs.FileMode(0o600)), 0, 0o644},
		{"replaces a public file with a secret", ptr(fs.FileMode(0o644)), 0o600, 0o600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "out.json")
			if tc.existing != nil {
				if err := os.WriteFile(p, []byte("old content that is longer"), *tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(p, []byte("new"), tc.perm); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.wantPerm {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.wantPerm)
			}
			if b, _ := os.ReadFile(p); string(b) != "new" {
				t.Errorf("content %q", b)
			}
			if extra := leftovers(t, dir, "out.json"); len(extra) > 0 {
				t.Errorf("left behind: %v", extra)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// A failed write leaves the target as it was and no temporary file.
func TestWriteFileFailures(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string) string // returns the target path
		keep   []string                              // names in dir afterwards
		wantIs error
	}{
		{"missing folder", func(t *testing.T, dir string) string { return filepath.Join(dir, "absent", "f") }, nil, fs.ErrNotExist},
		{"target is a folder", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "d")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, []string{"d"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := tc.setup(t, dir)
			err := WriteFile(p, []byte("x"), 0)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v, want %v", err, tc.wantIs)
			}
			if extra := leftovers(t, dir, tc.keep...); len(extra) > 0 {
				t.Errorf("left behind: %v", extra)
			}
		})
	}
}

// Close without Commit abandons the new content.
func TestCloseWithoutCommit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("content %q after an abandoned write", b)
	}
	if extra := leftovers(t, dir, "f"); len(extra) > 0 {
		t.Errorf("left behind: %v", extra)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Close succeeded")
	}
}

// Concurrent writers of one path each use their own temporary file: the
// result is one writer's complete content.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	const n = 16
	var wg sync.WaitGroup
	contents := map[string]bool{}
	for i := range n {
		c := fmt.Sprintf("writer %d %0512d", i, i)
		contents[c] = true
		wg.Go(func() {
			if err := WriteFile(p, []byte(c), 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(p)
	if err != nil || !contents[string(b)] {
		t.Fatalf("content %.40q, %v", b, err)
	}
	if extra := leftovers(t, dir, "f"); len(extra) > 0 {
		t.Errorf("left behind: %v", extra)
	}
}

func TestWriteNewNeverReplaces(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run-000001.json")
	if err := WriteNew(p, []byte("first"), 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(p, []byte("second"), 0); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: %v, want fs.ErrExist", err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "first" {
		t.Fatalf("content %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// WriteNewFunc names nothing when its writer fails: the error is the
// writer's, and no file is left.
func TestWriteNewFuncFails(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run-000001.json")
	broken := errors.New("cannot encode")
	err := WriteNewFunc(p, 0, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half"); err != nil {
			return err
		}
		return broken
	})
	if !errors.Is(err, broken) {
		t.Fatalf("error %v, want %v", err, broken)
	}
	if extra := leftovers(t, dir); len(extra) > 0 {
		t.Errorf("left behind: %v", extra)
	}
	if err := WriteNewFunc(p, 0, func(w io.Writer) error { _, err := io.WriteString(w, "whole"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "whole" {
		t.Fatalf("content %q, %v", b, err)
	}
}
