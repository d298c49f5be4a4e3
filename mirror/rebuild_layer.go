package mirror

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
)

// writeCatalogLayer writes the pruned-catalog layer into the blobs of the layout
// at dir and returns its path and digest.
func writeCatalogLayer(ctx context.Context, dir, prunedDir, label string, wipe []string) (string, digest.Digest, error) {
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp(blobs, ".airlock-layer-")
	if err != nil {
		return "", "", err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	h := sha256.New()
	if err := writeCatalogTarGz(ctx, io.MultiWriter(f, h), prunedDir, label, wipe); err != nil {
		return "", "", err
	}
	if err := f.Close(); err != nil {
		return "", "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	final := filepath.Join(blobs, sum)
	if err := os.Rename(f.Name(), final); err != nil {
		return "", "", err
	}
	return final, digest.NewDigestFromEncoded(digest.SHA256, sum), nil
}

// writeCatalogTarGz writes the deterministic gzip-compressed tar of the
// pruned-catalog layer to w.
func writeCatalogTarGz(ctx context.Context, w io.Writer, prunedDir, label string, wipe []string) error {
	zw, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	// The zero Header (no name, no time) keeps the output deterministic.
	tw := tar.NewWriter(zw)
	if err := writeCatalogTar(ctx, tw, prunedDir, label, wipe); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func tarHeader(name string, typ byte, mode int64, size int64) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Mode:     mode,
		Size:     size,
		ModTime:  rebuildEpoch,
		Format:   tar.FormatPAX,
	}
}

func writeCatalogTar(ctx context.Context, tw *tar.Writer, prunedDir, label string, wipe []string) error {
	prefix := strings.TrimPrefix(path.Clean("/"+label), "/")
	// The folder, then the opaque whiteout that hides what lower layers hold in it.
	if err := tw.WriteHeader(tarHeader(prefix+"/", tar.TypeDir, 0o755, 0)); err != nil {
		return err
	}
	if err := tw.WriteHeader(tarHeader(prefix+"/"+opaqueWhiteout, tar.TypeReg, 0o644, 0)); err != nil {
		return err
	}
	// filepath.WalkDir visits entries in lexical order: the layer is sorted.
	err := filepath.WalkDir(prunedDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(prunedDir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		name := prefix + "/" + filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return tw.WriteHeader(tarHeader(name+"/", tar.TypeDir, 0o755, 0))
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(tarHeader(name, tar.TypeReg, 0o644, info.Size())); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			n, err := io.Copy(tw, f)
			f.Close()
			if err == nil && n != info.Size() {
				err = fmt.Errorf("%s changed size while being read", p)
			}
			return err
		default:
			return fmt.Errorf("%s is not a regular file or folder (%s); a pruned catalog holds only files and folders", p, d.Type())
		}
	})
	if err != nil {
		return err
	}
	for _, c := range wipe {
		dir, base := path.Split(strings.TrimPrefix(c, "/"))
		if err := tw.WriteHeader(tarHeader(dir+whiteoutPrefix+base, tar.TypeReg, 0o644, 0)); err != nil {
			return err
		}
	}
	return nil
}
