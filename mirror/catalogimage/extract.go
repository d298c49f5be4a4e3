package catalogimage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// extractLayers writes into dst the files the image's filesystem holds under
// label. Layers are read top-down: an entry is written only if no upper layer
// already decided that path (holds it, deletes it with a whiteout, or makes its
// folder opaque), so nothing is written twice and layers below an opaque or
// deleted catalog folder are not downloaded at all.
//
// onFile, when not nil, is called with each regular file's path inside the
// catalog folder (slash-separated) once the file is completely written.
func extractLayers(ctx context.Context, layers []v1.Layer, label, dst string, limits ExtractLimits, log *slog.Logger, onFile func(rel string)) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	x := newExtractor(root, label, limits, log)
	x.onFile = onFile
	defer x.dropCursor()
	for i := len(layers) - 1; i >= 0 && !x.hidden; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, _ := layers[i].Digest()
		rc, err := openLayer(layers[i])
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
		return fmt.Errorf("%w: the label %s says the catalog is in %s, but no layer holds files there", ErrNotFBCImage, ConfigsLabel, label)
	}
	return nil
}

// decision is what upper layers decided about a path.
type decision uint8

const (
	undecided   decision = iota
	decidedDir           // a folder: lower layers may still add to it
	decidedHide          // a file, link, special file or whiteout: hides the path and everything below it
)

// node is one path below the catalog folder: what upper layers decided about it
// and what the extraction put on disk there. The folder is written only by the
// extractor (it starts empty), so the tree knows exactly what is on disk and
// no entry needs a filesystem lookup of its parents.
type node struct {
	children map[string]*node
	decided  decision
	opaque   bool // an upper layer hid this folder's lower-layer content
	disk     byte // 0 nothing, 'd' folder, 'f' regular file, 'l' symlink
}

func (n *node) child(name string, create bool) *node {
	c := n.children[name]
	if c == nil && create {
		if n.children == nil {
			n.children = map[string]*node{}
		}
		c = &node{}
		n.children[name] = c
	}
	return c
}

// clearDisk records that n and everything below it were removed from disk. A
// node with nothing on disk has nothing on disk below it, so only what was
// written is visited.
func (n *node) clearDisk() {
	n.disk = 0
	for _, c := range n.children {
		if c.disk != 0 {
			c.clearDisk()
		}
	}
}

// extractor applies layers, top-down, to a folder, keeping only what the image
// holds under one path (the catalog folder).
type extractor struct {
	root   *os.Root
	prefix string // the catalog folder, relative to the image root ("configs")
	limits ExtractLimits
	log    *slog.Logger

	tree node // the catalog folder
	// cur is an open handle on the folder curPath (relative to the catalog
	// folder), the parent of the last entry written: entries of a tar come
	// grouped by folder, so most need no path resolution from the root, which
	// would cost a lookup per level (quadratic in the depth).
	cur     *os.Root
	curPath string

	written int64 // bytes of regular files written
	entries int   // files, links and folders written

	// hidden is set once an upper layer hid the whole catalog folder.
	hidden bool
	// found is set once an entry under the catalog folder was seen.
	found bool
	// onFile is told each regular file once written (see extractLayers).
	onFile func(rel string)
	buf    []byte // copies file content (extractBuffer)
}

// extractBuffer is the size of the extraction's copy buffer.
const extractBuffer = 1 << 20

// onlyWriter hides a file's ReadFrom, so that io.CopyBuffer uses its buffer.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

func newExtractor(root *os.Root, label string, limits ExtractLimits, log *slog.Logger) *extractor {
	return &extractor{
		root:   root,
		prefix: strings.TrimPrefix(path.Clean("/"+label), "/"),
		limits: limits.withDefaults(),
		log:    log,
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
	if x.prefix == "" { // the whole tree (ExtractArchive)
		return p, true
	}
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

// lookup returns the node of r (relative to the catalog folder), creating the
// nodes on the way when create is set; nil when absent.
func (x *extractor) lookup(r string, create bool) *node {
	n := &x.tree
	for rest := r; rest != "." && rest != ""; {
		name, tail, _ := strings.Cut(rest, "/")
		if n = n.child(name, create); n == nil {
			return nil
		}
		rest = tail
	}
	return n
}

// shadowed reports whether an upper layer decided r or hid one of its parents.
func (x *extractor) shadowed(r string) bool {
	n := &x.tree
	for rest := r; ; {
		if n.decided == decidedHide || n.opaque {
			return true
		}
		name, tail, more := strings.Cut(rest, "/")
		if n = n.children[name]; n == nil {
			return false
		}
		if !more {
			return n.decided != undecided
		}
		rest = tail
	}
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
		if depth := strings.Count(r, "/") + 1; depth > x.limits.MaxDepth {
			return fmt.Errorf("%w: entry %s is %d levels below /%s, more than the %d allowed (ExtractLimits.MaxDepth); real catalogs nest a few levels deep, so check where this image comes from",
				ErrExtractLimit, h.Name, depth, x.prefix, x.limits.MaxDepth)
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
		if n := x.lookup(r, true); n.decided == undecided {
			n.decided = decidedHide
		}
	}
	for r := range opaques {
		x.lookup(r, true).opaque = true
	}
	if hideAll {
		x.hidden = true
	}
	return nil
}
