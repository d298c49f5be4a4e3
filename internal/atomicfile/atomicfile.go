// Package atomicfile writes files so that a reader (or a run interrupted at any
// moment) sees either the old content or the new one, never a part: the data
// goes to a temporary file with a unique name in the same folder, is synced to
// disk, then renamed over the target.
package atomicfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DefaultPerm is the mode of files written with perm 0: readable by everyone,
// as os.WriteFile(..., 0o644) would leave them under the usual umask. Pass a
// narrower mode (0o600) for secrets.
const DefaultPerm fs.FileMode = 0o644

// File is a file being written in place of a target path. Write to it, then
// Commit; Close without Commit (or after a failed Commit) removes the
// temporary file and leaves the target as it was.
type File struct {
	*os.File
	path      string
	perm      fs.FileMode
	committed bool
}

// Create starts writing path: a temporary file named ".BASE.*.tmp" in the same
// folder (which must exist), so concurrent writers never share one.
func Create(path string, perm fs.FileMode) (*File, error) {
	if perm == 0 {
		perm = DefaultPerm
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &File{File: f, path: path, perm: perm}, nil
}

// Commit syncs the data, sets the mode and renames the file over the target,
// then syncs the folder so the rename survives a crash.
func (f *File) Commit() error {
	if f.committed {
		return nil
	}
	err := f.File.Chmod(f.perm) // exact, whatever the umask
	if err == nil {
		err = f.File.Sync()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.File.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.File.Name())
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	f.committed = true
	syncDir(filepath.Dir(f.path))
	return nil
}

// Close abandons an uncommitted file (removing the temporary file); after
// Commit it does nothing. It is safe to defer right after Create.
func (f *File) Close() error {
	if f.committed {
		return nil
	}
	f.File.Close()
	if err := os.Remove(f.File.Name()); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// WriteFile writes data to path atomically with mode perm (0: DefaultPerm).
// The folder must exist.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// syncDir flushes a folder's entries (best effort: not every system can).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// WriteNew writes data to path like WriteFile, but only if path does not exist:
// the complete, synced file is hard-linked to its name, which fails with an
// error wrapping fs.ErrExist when another writer got there first. Records that
// are never rewritten (a history) use it.
func WriteNew(path string, data []byte, perm fs.FileMode) error {
	return WriteNewFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteNewFunc is WriteNew of what write writes (a record encoded straight
// into the file instead of into a buffer first).
func WriteNewFunc(path string, perm fs.FileMode, write func(io.Writer) error) error {
	if perm == 0 {
		perm = DefaultPerm
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = write(f)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// SyncDir flushes a folder's entries after renames into it (best effort).
func SyncDir(dir string) { syncDir(dir) }
