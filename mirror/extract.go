package mirror

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// extractLayers writes into dst the files the image's filesystem holds under
// label. Layers are read top-down: an entry is written only if no upper layer
// already decided that path (holds it, deletes it with a whiteout, or makes its
// folder opaque), so nothing is written twice and layers below an opaque or
// deleted catalog folder are not downloaded at all.
func extractLayers(ctx context.Context, layers []v1.Layer, label, dst string, log *slog.Logger) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	x := newExtractor(root, label, log)
	for i := len(layers) - 1; i >= 0 && !x.hidden; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, _ := layers[i].Digest()
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return fmt.Errorf("reading layer %s: %w", d, err)
		}
		err = x.layer(ctx, rc)
		if err == nil {
			// Drain so the digest of what was read is verified.
			_, err = io.Copy(io.Discard, rc)
		}
		if cerr := rc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("layer %s: %w", d, err)
		}
	}
	if !x.found {
		return fmt.Errorf("%w: the label %s says the catalog is in %s, but no layer holds files there", ErrNotFBCImage, CatalogConfigsLabel, label)
	}
	return nil
}

// extractor applies layers, top-down, to a folder, keeping only what the image
// holds under one path (the catalog folder).
type extractor struct {
	root   *os.Root
	prefix string // the catalog folder, relative to the image root ("configs")
	log    *slog.Logger

	// decided maps paths (relative to the catalog folder) that an upper layer
	// decided to true when they hide everything below them in lower layers
	// (a file, a symlink or a whiteout) and false for directories.
	decided map[string]bool
	// opaque holds folders whose lower-layer content an upper layer hid.
	opaque map[string]bool
	// hidden is set once an upper layer hid the whole catalog folder.
	hidden bool
	// found is set once an entry under the catalog folder was seen.
	found bool
}

func newExtractor(root *os.Root, label string, log *slog.Logger) *extractor {
	return &extractor{
		root:    root,
		prefix:  strings.TrimPrefix(path.Clean("/"+label), "/"),
		log:     log,
		decided: map[string]bool{},
		opaque:  map[string]bool{},
	}
}

// cleanEntryName validates a tar entry name and returns it cleaned and relative
// to the image root ("." for the root itself).
func cleanEntryName(n string) (string, error) {
	if n == "" || strings.ContainsRune(n, 0) {
		return "", fmt.Errorf("%w: empty or NUL-containing entry name %q", ErrUnsafeLayer, n)
	}
	if strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("%w: absolute entry name %q", ErrUnsafeLayer, n)
	}
	c := path.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: entry %q points outside the image root", ErrUnsafeLayer, n)
	}
	return c, nil
}

// rel returns p relative to the catalog folder ("." for the folder itself) and
// whether p is inside it.
func (x *extractor) rel(p string) (string, bool) {
	if p == x.prefix {
		return ".", true
	}
	if strings.HasPrefix(p, x.prefix+"/") {
		return p[len(x.prefix)+1:], true
	}
	return "", false
}

// coversFolder reports whether p is the catalog folder or one of its ancestors.
func (x *extractor) coversFolder(p string) bool {
	return p == "." || p == x.prefix || strings.HasPrefix(x.prefix, p+"/")
}

// shadowed reports whether an upper layer decided r or hid one of its parents.
func (x *extractor) shadowed(r string) bool {
	if _, ok := x.decided[r]; ok {
		return true
	}
	for d := r; d != "."; {
		d = path.Dir(d)
		if x.decided[d] || x.opaque[d] {
			return true
		}
	}
	return false
}

// layer applies one layer (an uncompressed tar stream).
func (x *extractor) layer(ctx context.Context, r io.Reader) error {
	tr := tar.NewReader(r)
	// What this layer decides applies to lower layers only: stage it.
	here := map[string]bool{}       // paths written by this layer
	tombstones := map[string]bool{} // whiteouts of this layer
	opaques := map[string]bool{}    // opaque folders of this layer
	hideAll := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading tar: %w", err)
		}
		p, err := cleanEntryName(h.Name)
		if err != nil {
			return err
		}
		base, dir := path.Base(p), path.Dir(p)
		if base == opaqueWhiteout {
			if x.coversFolder(dir) {
				hideAll = true
			} else if r, ok := x.rel(dir); ok {
				opaques[r] = true
			}
			continue
		}
		if strings.HasPrefix(base, whiteoutPrefix) {
			target := path.Join(dir, base[len(whiteoutPrefix):])
			if x.coversFolder(target) {
				hideAll = true
			} else if r, ok := x.rel(target); ok {
				tombstones[r] = true
			}
			continue
		}
		r, inside := x.rel(p)
		if !inside {
			if x.coversFolder(p) && h.Typeflag != tar.TypeDir {
				// A file replaces the catalog folder or one of its parents.
				hideAll = true
			}
			continue
		}
		x.found = true
		if r == "." {
			if h.Typeflag != tar.TypeDir {
				hideAll = true
			}
			continue
		}
		if x.shadowed(r) && !here[r] {
			continue
		}
		if err := x.write(tr, h, r); err != nil {
			return err
		}
		here[r] = true
	}
	for r := range tombstones {
		if _, ok := x.decided[r]; !ok {
			x.decided[r] = true
		}
	}
	for r := range opaques {
		x.opaque[r] = true
	}
	if hideAll {
		x.hidden = true
	}
	return nil
}

// write creates entry h at r (relative to the catalog folder) and records it.
func (x *extractor) write(tr *tar.Reader, h *tar.Header, r string) error {
	switch h.Typeflag {
	case tar.TypeDir:
		if err := x.root.MkdirAll(r, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", h.Name, err)
		}
		if _, ok := x.decided[r]; !ok {
			x.decided[r] = false
		}
	case tar.TypeReg:
		if err := x.mkParent(r, h.Name); err != nil {
			return err
		}
		_ = x.root.RemoveAll(r) // an earlier entry of this layer with the same name
		f, err := x.root.OpenFile(r, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("creating %s: %w", h.Name, err)
		}
		_, err = io.CopyN(f, tr, h.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", h.Name, err)
		}
		x.decided[r] = true
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
		if err := x.mkParent(r, h.Name); err != nil {
			return err
		}
		_ = x.root.RemoveAll(r)
		if err := x.root.Symlink(relTarget, r); err != nil {
			return fmt.Errorf("creating symlink %s: %w", h.Name, err)
		}
		x.decided[r] = true
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
		if err := x.mkParent(r, h.Name); err != nil {
			return err
		}
		_ = x.root.RemoveAll(r)
		if err := x.root.Link(lr, r); err != nil {
			x.log.Warn("skipping a hard link whose target was not extracted", "entry", h.Name, "target", h.Linkname, "error", err)
			return nil
		}
		x.decided[r] = true
	default:
		x.log.Debug("skipping a special file in the catalog folder", "entry", h.Name, "type", string(h.Typeflag))
	}
	return nil
}

// mkParent creates the folders above r. A folder created for an entry is
// decided by this layer as much as one with its own entry: lower layers must not
// put a file or link in its place. A parent that is a symlink is refused, so that
// what is written (and later read) is exactly where its name says.
func (x *extractor) mkParent(r, name string) error {
	d := path.Dir(r)
	if d == "." {
		return nil
	}
	for p := d; p != "."; p = path.Dir(p) {
		if fi, err := x.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: entry %s is below a symlink (%s)", ErrUnsafeLayer, name, p)
		}
		if _, ok := x.decided[p]; !ok {
			x.decided[p] = false
		}
	}
	if err := x.root.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", name, err)
	}
	return nil
}
