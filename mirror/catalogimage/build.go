package catalogimage

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// FetchImage resolves the image ref (a registry reference with a tag or a
// digest, or "oci://PATH") to a digest and, for a registry, copies it whole
// (every platform) with the copy engine into an OCI layout under
// workDir/<what>s/, digests verified, as catalogs are fetched. A layout that
// already holds the image is not copied again. The Fetched's Image is the
// platform image of FetchOptions.Platform; Index is set for a multi-platform
// image. what names the image in errors ("graph base image").
func FetchImage(ctx context.Context, ref, workDir, what string, o FetchOptions) (*Fetched, error) {
	fc, _, err := resolveImage(ctx, ref, workDir, o, what, false)
	return fc, err
}

// ExtractArchive writes the files of a tar archive (gzip-compressed or not)
// into dst, an existing folder, with the same rules as image layers:
// entry names cleaned, none may leave dst, links stay inside it, and
// limits bound the bytes, files and depth written. An archive with no
// entry is an error.
func ExtractArchive(ctx context.Context, r io.Reader, dst string, limits ExtractLimits, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var tr io.Reader = br
	if magic, _ := br.Peek(len(gzipMagic)); bytes.Equal(magic, gzipMagic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("reading the gzip header: %w", err)
		}
		defer zr.Close()
		tr = zr
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	x := newExtractor(root, "", limits, log)
	defer x.dropCursor()
	if err := x.layer(ctx, tr); err != nil {
		return err
	}
	// Read to the end: gzip checks its checksum there.
	if _, err := io.Copy(io.Discard, tr); err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	if x.entries == 0 {
		return errors.New("the archive holds no file")
	}
	return nil
}

// AddLayer builds an image from base (fetched with FetchImage): every image
// of it (every platform of an index) gets one more layer holding the files
// of dir under folder (an absolute path in the image; regular files and
// folders only), and cmd as its command (the entrypoint is cleared, so cmd
// runs as written). history is the layer's history text. Everything is
// reproducible: the layer's entries are sorted, with fixed times (the epoch),
// owner 0:0 and modes 0644/0755, gzip without a timestamp, and the config's
// creation time is the base's, so the same base and files always give the
// same digest. The image is written into opts.LayoutDir (created, or reused:
// blobs it holds are not written again) under opts.Tag (default "latest").
func AddLayer(ctx context.Context, base *Fetched, dir, folder string, cmd []string, history string, opts RebuildOptions) (*Rebuilt, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if base == nil || base.Image == nil {
		return nil, errors.New("build image: base image not fetched (use FetchImage first)")
	}
	if len(cmd) == 0 {
		return nil, fmt.Errorf("build image on %s: no command given", base.Ref)
	}
	folder = path.Clean("/" + folder)
	if folder == "/" || strings.Contains(folder, "..") {
		return nil, fmt.Errorf("build image on %s: folder %q: give an absolute folder below /", base.Ref, folder)
	}
	if opts.LayoutDir == "" {
		return nil, fmt.Errorf("build image on %s: no layout directory given", base.Ref)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("build image on %s: %s: not a directory", base.Ref, dir)
	}
	tag := opts.Tag
	if tag == "" {
		tag = "latest"
	}
	lp, err := openOrCreateLayout(opts.LayoutDir)
	if err != nil {
		return nil, fmt.Errorf("build image on %s: %w", base.Ref, err)
	}
	layer, err := writeCatalogLayer(ctx, opts.LayoutDir, dir, folder, nil)
	if err != nil {
		return nil, fmt.Errorf("build image on %s: building the layer from %s: %w", base.Ref, dir, err)
	}
	b := &rebuilder{op: "build image on", label: folder, cmd: cmd, history: history, catalogLayer: layer, layers: map[types.MediaType]v1.Layer{}, log: log, ref: base.Ref}
	return b.write(ctx, base, lp, opts.LayoutDir, tag)
}
