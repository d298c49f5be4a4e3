package catalogimage

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// write creates entry h at r (relative to the catalog folder) and records it.
func (x *extractor) write(tr *tar.Reader, h *tar.Header, r string) error {
	switch h.Typeflag {
	case tar.TypeDir:
		n, err := x.mkParent(r, h.Name)
		if err != nil {
			return err
		}
		if n.disk != 'd' {
			if err := x.admit(h.Name, 0); err != nil {
				return err
			}
			if err := x.replace(n, r); err != nil {
				return err
			}
			if err := x.mkdir(r); err != nil {
				return fmt.Errorf("creating %s: %w", h.Name, err)
			}
			n.disk = 'd'
		}
		// A folder that replaces a file written earlier by this layer lets
		// lower layers add to it again.
		n.decided = decidedDir
	case tar.TypeReg:
		if err := x.admit(h.Name, h.Size); err != nil {
			return err
		}
		n, err := x.mkParent(r, h.Name)
		if err != nil {
			return err
		}
		if err := x.replace(n, r); err != nil { // an earlier entry of this layer with the same name
			return err
		}
		dir, err := x.openDir(path.Dir(r))
		if err != nil {
			return fmt.Errorf("creating %s: %w", h.Name, err)
		}
		// O_EXCL: never open something that is already there (a FIFO would block).
		f, err := dir.OpenFile(path.Base(r), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("creating %s: %w", h.Name, err)
		}
		n.disk = 'f'
		if x.buf == nil {
			x.buf = make([]byte, extractBuffer)
		}
		// A big buffer (io.CopyN would use 32 KiB): a catalog is gigabytes
		// of large files, written with a thousand times fewer system calls.
		var wrote int64
		wrote, err = io.CopyBuffer(onlyWriter{f}, io.LimitReader(tr, h.Size), x.buf)
		if err == nil && wrote != h.Size {
			err = fmt.Errorf("the layer ended after %d of %d bytes: %w", wrote, h.Size, io.ErrUnexpectedEOF)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", h.Name, err)
		}
		n.decided = decidedHide
		if x.onFile != nil {
			x.onFile(r)
		}
	case tar.TypeSymlink:
		target := h.Linkname
		var resolved string
		if strings.HasPrefix(target, "/") {
			resolved = path.Clean(target)[1:]
		} else {
			resolved = path.Join(x.prefix, path.Dir(r), target)
		}
		tr2, ok := x.rel(path.Clean(resolved))
		if target == "" || !ok || strings.HasPrefix(path.Clean(resolved), "..") {
			return fmt.Errorf("%w: symlink %s -> %s points outside %s", ErrUnsafeLayer, h.Name, h.Linkname, "/"+x.prefix)
		}
		// Re-express the target relative to the link, inside the catalog folder.
		relTarget, err := filepath.Rel(filepath.Dir(filepath.FromSlash(r)), filepath.FromSlash(tr2))
		if err != nil {
			return fmt.Errorf("symlink %s: %w", h.Name, err)
		}
		if err := x.admit(h.Name, 0); err != nil {
			return err
		}
		n, err := x.mkParent(r, h.Name)
		if err != nil {
			return err
		}
		if err := x.replace(n, r); err != nil {
			return err
		}
		dir, err := x.openDir(path.Dir(r))
		if err == nil {
			err = dir.Symlink(relTarget, path.Base(r))
		}
		if err != nil {
			return fmt.Errorf("creating symlink %s: %w", h.Name, err)
		}
		n.disk, n.decided = 'l', decidedHide
	case tar.TypeLink:
		lp, err := cleanEntryName(h.Linkname)
		if err != nil {
			return fmt.Errorf("hard link %s: %w", h.Name, err)
		}
		lr, ok := x.rel(lp)
		if !ok || lr == "." {
			x.log.Warn("skipping a hard link to a file outside the catalog folder", "entry", h.Name, "target", h.Linkname)
			return nil
		}
		t := x.lookup(lr, false)
		if t == nil || (t.disk != 'f' && t.disk != 'l') {
			x.log.Warn("skipping a hard link whose target was not extracted as a file", "entry", h.Name, "target", h.Linkname)
			return nil
		}
		if err := x.admit(h.Name, 0); err != nil {
			return err
		}
		kind := t.disk // a hard link to a symlink is a symlink
		n, err := x.mkParent(r, h.Name)
		if err != nil {
			return err
		}
		if n == t {
			return nil
		}
		if err := x.replace(n, r); err != nil {
			return err
		}
		if err := x.root.Link(lr, r); err != nil {
			x.log.Warn("skipping a hard link whose target was not extracted", "entry", h.Name, "target", h.Linkname, "error", err)
			return nil
		}
		n.disk, n.decided = kind, decidedHide
	case tar.TypeChar, tar.TypeBlock:
		// A device has no place in a catalog: refused, named, never skipped
		// silently.
		kind := "character device"
		if h.Typeflag == tar.TypeBlock {
			kind = "block device"
		}
		return fmt.Errorf("%w: %s is a %s (%d, %d): a catalog folder holds files, folders and links only; rebuild the catalog image without it", ErrUnsafeLayer, h.Name, kind, h.Devmajor, h.Devminor)
	default:
		// FIFOs and the like are never created (opening a FIFO blocks), but
		// they hide what lower layers hold at the same path, as they would
		// in the image's filesystem.
		x.log.Debug("skipping a special file in the catalog folder", "entry", h.Name, "type", string(h.Typeflag))
		n := x.lookup(r, true)
		if err := x.replace(n, r); err != nil {
			return err
		}
		n.decided = decidedHide
	}
	return nil
}

// mkParent creates the folders above r and returns r's node. A folder created
// for an entry is decided by this layer as much as one with its own entry:
// lower layers must not put a file or link in its place. A parent that is a
// symlink is refused, so that what is written (and later read) is exactly
// where its name says.
func (x *extractor) mkParent(r, name string) (*node, error) {
	n := &x.tree
	for end := 0; ; {
		i := strings.IndexByte(r[end:], '/')
		if i < 0 {
			return n.child(r[end:], true), nil
		}
		seg, at := r[end:end+i], r[:end+i]
		end += i + 1
		n = n.child(seg, true)
		switch n.disk {
		case 'l':
			return nil, fmt.Errorf("%w: entry %s is below a symlink (%s)", ErrUnsafeLayer, name, at)
		case 'f':
			return nil, fmt.Errorf("creating the folder of %s: %s is a file", name, at)
		case 0:
			if err := x.admit(name, 0); err != nil {
				return nil, err
			}
			if err := x.mkdir(at); err != nil {
				return nil, fmt.Errorf("creating the folder of %s: %w", name, err)
			}
			n.disk = 'd'
		}
		if n.decided == undecided {
			n.decided = decidedDir
		}
	}
}

// replace removes what an earlier entry of this layer put at r.
func (x *extractor) replace(n *node, r string) error {
	if n.disk == 0 {
		return nil
	}
	x.dropCursor() // the open folder may be the one removed
	if err := x.root.RemoveAll(r); err != nil {
		return fmt.Errorf("replacing %s: %w", r, err)
	}
	n.clearDisk()
	return nil
}

// mkdir creates folder r, whose parent exists.
func (x *extractor) mkdir(r string) error {
	dir, err := x.openDir(path.Dir(r))
	if err != nil {
		return err
	}
	return dir.Mkdir(path.Base(r), 0o755)
}

// openDir returns an open handle on folder d (relative to the catalog folder),
// reusing the handle of the last folder written to when d is that folder or
// one of its children.
func (x *extractor) openDir(d string) (*os.Root, error) {
	if d == "." {
		return x.root, nil
	}
	if x.cur != nil && x.curPath == d {
		return x.cur, nil
	}
	var (
		r   *os.Root
		err error
	)
	if x.cur != nil && path.Dir(d) == x.curPath {
		r, err = x.cur.OpenRoot(path.Base(d))
	} else {
		r, err = x.root.OpenRoot(d)
	}
	if err != nil {
		return nil, err
	}
	x.dropCursor()
	x.cur, x.curPath = r, d
	return r, nil
}

func (x *extractor) dropCursor() {
	if x.cur != nil {
		x.cur.Close()
		x.cur, x.curPath = nil, ""
	}
}
