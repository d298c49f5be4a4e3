package catalogimage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/mirror/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ggcrlayout "github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/opencontainers/go-digest"
)

// openOrCreateLayout opens the OCI layout at dir, creating an empty one if needed.
func openOrCreateLayout(dir string) (ggcrlayout.Path, error) {
	if layout.IsDir(dir) {
		return ggcrlayout.FromPath(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return ggcrlayout.Write(dir, empty.Index)
}

// layoutHas reports whether index.json of lp names manifest d with tag, and its
// blob is present.
func layoutHas(lp ggcrlayout.Path, d v1.Hash, tag string) bool {
	ii, err := lp.ImageIndex()
	if err != nil {
		return false
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return false
	}
	for _, m := range im.Manifests {
		if m.Digest == d && m.Annotations[oci.AnnotationRefName] == tag {
			_, err := os.Stat(filepath.Join(string(lp), "blobs", d.Algorithm, d.Hex))
			return err == nil
		}
	}
	return false
}

// removeUnreferencedBlobs deletes the blobs no manifest of index.json reaches,
// left over from earlier rebuilds into the same layout.
func removeUnreferencedBlobs(lp ggcrlayout.Path) error {
	keep := map[string]bool{}
	var visit func(raw []byte, depth int) error
	visit = func(raw []byte, depth int) error {
		if depth > 8 {
			return errors.New("manifests nested too deep")
		}
		refs, err := oci.Parse(oci.Manifest{Digest: digest.FromBytes(raw), Raw: raw})
		if err != nil {
			return err
		}
		for _, b := range append(refs.Blobs, refs.Foreign...) {
			keep[b.Digest.String()] = true
		}
		for _, c := range refs.Manifests {
			keep[c.Digest.String()] = true
			h, err := v1.NewHash(c.Digest.String())
			if err != nil {
				return err
			}
			b, err := lp.Bytes(h)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return err
			}
			if err := visit(b, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	top, err := os.ReadFile(filepath.Join(string(lp), "index.json"))
	if err != nil {
		return err
	}
	if err := visit(top, 0); err != nil {
		return err
	}
	return filepath.WalkDir(filepath.Join(string(lp), "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		alg := filepath.Base(filepath.Dir(p))
		if strings.HasPrefix(d.Name(), ".") || keep[alg+":"+d.Name()] {
			return nil
		}
		return os.Remove(p)
	})
}

// layoutComplete checks that every blob of top (a v1.Image or v1.ImageIndex)
// is in the layout with its size.
func layoutComplete(lp ggcrlayout.Path, top any) error {
	var images []v1.Image
	switch t := top.(type) {
	case v1.ImageIndex:
		im, err := t.IndexManifest()
		if err != nil {
			return err
		}
		for _, m := range im.Manifests {
			if !m.MediaType.IsImage() {
				continue
			}
			if _, err := os.Stat(filepath.Join(string(lp), "blobs", m.Digest.Algorithm, m.Digest.Hex)); err != nil {
				return err
			}
			img, err := t.Image(m.Digest)
			if err != nil {
				return err
			}
			images = append(images, img)
		}
	case v1.Image:
		images = append(images, t)
	default:
		return fmt.Errorf("not an image or an index: %T", top)
	}
	for _, img := range images {
		m, err := img.Manifest()
		if err != nil {
			return err
		}
		for _, b := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			st, err := os.Stat(filepath.Join(string(lp), "blobs", b.Digest.Algorithm, b.Digest.Hex))
			if err != nil {
				return err
			}
			if st.Size() != b.Size {
				return fmt.Errorf("blob %s in %s has %d bytes, want %d", b.Digest, lp, st.Size(), b.Size)
			}
		}
	}
	return nil
}
