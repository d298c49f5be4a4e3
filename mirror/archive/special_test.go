package archive

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A chunk replaced by something other than a regular file (a FIFO, a folder, a
// symlink to a FIFO) is refused by every reader without being opened: opening
// a FIFO would block forever. A symlink to a real chunk is followed.
func TestSpecialFileChunks(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	m := writeArchive(t, base, WriterOptions{ChunkSize: 28 << 10}, testSet(12))
	if len(m.Chunks) < 3 {
		t.Fatalf("need 3 chunks, got %d", len(m.Chunks))
	}
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	tests := []struct {
		name    string
		victim  string
		replace func(t *testing.T, p string) error
		wantMsg string // empty: the archive is fine
	}{
		{"fifo", "airlock_000002.tar", func(t *testing.T, p string) error { return fifo(p) }, "is a named pipe (FIFO), not a regular file"},
		{"fifo first chunk", "airlock_000001.tar", func(t *testing.T, p string) error { return fifo(p) }, "is a named pipe (FIFO), not a regular file"},
		{"folder", "airlock_000002.tar", func(t *testing.T, p string) error { return os.Mkdir(p, 0o755) }, "is a folder, not a regular file"},
		{"symlink to a fifo", "airlock_000003.tar", func(t *testing.T, p string) error {
			target := filepath.Join(t.TempDir(), "pipe")
			if err := fifo(target); err != nil {
				return err
			}
			return os.Symlink(target, p)
		}, "is a named pipe (FIFO), not a regular file"},
		{"symlink to a chunk", "airlock_000002.tar", func(t *testing.T, p string) error {
			target := filepath.Join(t.TempDir(), "moved.tar")
			if err := os.WriteFile(target, readFile(t, filepath.Join(base, "airlock_000002.tar")), 0o644); err != nil {
				return err
			}
			return os.Symlink(target, p)
		}, ""},
	}
	readers := map[string]func(dir string) error{
		"Open": func(dir string) error {
			r, err := Open(dir)
			if err == nil {
				r.Close()
			}
			return err
		},
		"Describe":    func(dir string) error { _, err := Describe(dir); return err },
		"Verify":      func(dir string) error { _, err := Verify(ctx, dir); return err },
		"VerifyChunk": nil, // the victim alone, below
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "archive")
			copyDir(t, base, dir)
			victim := filepath.Join(dir, tc.victim)
			if err := os.Remove(victim); err != nil {
				t.Fatal(err)
			}
			if err := tc.replace(t, victim); err != nil {
				t.Fatal(err)
			}
			readers["VerifyChunk"] = func(string) error { _, err := VerifyChunk(ctx, victim); return err }
			for rname, read := range readers {
				done := make(chan error, 1)
				go func() { done <- read(dir) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(time.Minute):
					t.Fatalf("%s hangs on a %s", rname, tc.name)
				}
				if tc.wantMsg == "" {
					if err != nil {
						t.Errorf("%s: %v", rname, err)
					}
					continue
				}
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), tc.victim) {
					t.Errorf("%s: error = %v, want ErrCorrupt naming %s and saying %q", rname, err, tc.victim, tc.wantMsg)
				}
			}
		})
	}
}
