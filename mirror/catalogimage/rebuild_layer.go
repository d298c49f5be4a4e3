package catalogimage

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror/layout"
)

// catalogLayer is the pruned-catalog layer written into the blobs of a
// layout. Its digest, diffID and size are known from the one pass that wrote
// it, so no library reads the file back to learn them.
type catalogLayer struct {
	path   string
	digest v1.Hash
	diffID v1.Hash
	size   int64
	mt     types.MediaType
}

func (l *catalogLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *catalogLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *catalogLayer) Size() (int64, error)                { return l.size, nil }
func (l *catalogLayer) MediaType() (types.MediaType, error) { return l.mt, nil }
func (l *catalogLayer) Compressed() (io.ReadCloser, error)  { return os.Open(l.path) }

// as returns the layer under media type mt (the same bytes: Docker and OCI
// manifests name a gzip layer differently).
func (l *catalogLayer) as(mt types.MediaType) (v1.Layer, error) {
	c := *l
	c.mt = mt
	return partial.CompressedToLayer(&c)
}

// writeCatalogLayer writes the pruned-catalog layer into the blobs of the layout
// at dir. Compressing is most of a rebuild's cost, and a re-run with the same
// selection prunes to the same catalog: the tar is hashed first (its diffID),
// and a layer the layout already holds for that diffID is reused.
func writeCatalogLayer(ctx context.Context, dir, prunedDir, label string, wipe []string) (*catalogLayer, error) {
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return nil, err
	}
	// The tar is hashed first only when some layer was built here before: on
	// a first rebuild there is nothing to reuse, and the diffID comes out of
	// the compression pass.
	diffHex := ""
	if entries, _ := os.ReadDir(filepath.Join(dir, layerMemoDir)); len(entries) > 0 {
		diff := sha256.New()
		tw := tar.NewWriter(diff)
		if err := writeCatalogTar(ctx, tw, prunedDir, label, wipe); err != nil {
			return nil, err
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		diffHex = hex.EncodeToString(diff.Sum(nil))
		if l := reuseLayer(blobs, filepath.Join(dir, layerMemoDir, diffHex), diffHex); l != nil {
			return l, nil
		}
	}

	f, err := os.CreateTemp(blobs, ".airlock-layer-")
	if err != nil {
		return nil, err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(f, h)}
	diffID, err := writeCatalogTarGzN(ctx, cw, prunedDir, label, wipe, 2*runtime.GOMAXPROCS(0))
	if err != nil {
		return nil, err
	}
	if diffHex == "" {
		diffHex = diffID.Encoded()
	} else if diffID.Encoded() != diffHex {
		return nil, fmt.Errorf("the pruned catalog in %s changed while its layer was written", prunedDir)
	}
	memo := filepath.Join(dir, layerMemoDir, diffHex)
	if err := f.Close(); err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	final := filepath.Join(blobs, sum)
	if err := os.Rename(f.Name(), final); err != nil {
		return nil, err
	}
	// Remember which layer holds this tar (best effort: without it the next
	// run compresses again).
	if err := os.MkdirAll(filepath.Dir(memo), 0o755); err == nil {
		_ = atomicfile.WriteFile(memo, []byte(fmt.Sprintf("%s %d\n", sum, cw.n)), 0o644)
	}
	return &catalogLayer{
		path:   final,
		digest: v1.Hash{Algorithm: "sha256", Hex: sum},
		diffID: v1.Hash{Algorithm: "sha256", Hex: diffHex},
		size:   cw.n,
		mt:     types.OCILayer,
	}, nil
}

// layerMemoDir holds, in a rebuilt catalog's layout, one file per layer built:
// named by the layer's diffID, holding its digest and size.
const layerMemoDir = ".airlock-layers"

// reuseLayer returns the layer memo names when its blob is still in blobs with
// the size recorded; nil otherwise. The blob is not hashed here: whatever
// reads it from the layout (the copy engine, the archive) verifies its digest.
func reuseLayer(blobs, memo, diffHex string) *catalogLayer {
	b, err := os.ReadFile(memo)
	if err != nil {
		return nil
	}
	var sum string
	var size int64
	if _, err := fmt.Sscanf(string(b), "%64s %d", &sum, &size); err != nil || len(sum) != 64 {
		return nil
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return nil
	}
	p := filepath.Join(blobs, sum)
	if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() || st.Size() != size {
		return nil
	}
	return &catalogLayer{
		path:   p,
		digest: v1.Hash{Algorithm: "sha256", Hex: sum},
		diffID: v1.Hash{Algorithm: "sha256", Hex: diffHex},
		size:   size,
		mt:     types.OCILayer,
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeCatalogTarGzN writes the deterministic gzip-compressed tar of the
// pruned-catalog layer to w, compressing up to blocks blocks at once (the
// output is the same for any value), and returns the digest of the tar (the
// layer's diffID).
func writeCatalogTarGzN(ctx context.Context, w io.Writer, prunedDir, label string, wipe []string, blocks int) (digest.Digest, error) {
	zw, err := layout.NewLayerGzip(w, blocks)
	if err != nil {
		return "", err
	}
	diff := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(zw, diff))
	err = writeCatalogTar(ctx, tw, prunedDir, label, wipe)
	if err == nil {
		err = tw.Close()
	}
	// Close always: it waits for the blocks still being compressed.
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return digest.NewDigest(digest.SHA256, diff), nil
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
