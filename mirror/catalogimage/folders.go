package catalogimage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ErrNoFolder is returned (wrapped) by FetchFolders when no layer of the
// image holds files under a folder it was asked for.
var ErrNoFolder = errors.New("the image holds no such folder")

// FetchedFolders is an image resolved to a digest with some of its folders
// extracted (FetchFolders).
type FetchedFolders struct {
	*Fetched
	// Config is the config of the image the folders were extracted from.
	Config *v1.ConfigFile
	// Dir holds each folder asked for at its path in the image
	// (Dir/release-manifests for "/release-manifests").
	Dir string
}

// FetchFolders resolves the image ref (a registry reference or "oci://PATH")
// through the same path as catalogs (the copy engine into an OCI layout
// under workDir, retries, digests verified; of an index, the image of
// FetchOptions.Platform) and extracts the folders (absolute paths in the
// image, "/release-manifests") under workDir/<what>s/<name>/<digest>/<what>,
// with the same safe extraction as catalogs (layers top-down, whiteouts
// honoured, no path escapes the folder, FetchOptions.Limits). check, when
// set, looks at the image config before anything is extracted. Folders an
// earlier call extracted completely are not extracted again.
func FetchFolders(ctx context.Context, ref, workDir, what string, folders []string, o FetchOptions, check func(*v1.ConfigFile) error) (*FetchedFolders, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fc, key, err := resolveImage(ctx, ref, workDir, o, what, false)
	if err != nil {
		return nil, err
	}
	cfg, err := fc.Image.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("%s %s@%s: reading the image config: %w", what, ref, fc.Digest, err)
	}
	if check != nil {
		if err := check(cfg); err != nil {
			return nil, fmt.Errorf("%s %s@%s: %w", what, ref, fc.Digest, err)
		}
	}
	ff := &FetchedFolders{Fetched: fc, Config: cfg}
	dir := filepath.Join(workDir, what+"s", key, fc.Digest.Encoded())
	ff.Dir = filepath.Join(dir, what)
	if st, err := os.Stat(filepath.Join(dir, completeMarker)); err == nil && st.Mode().IsRegular() {
		fc.Cached = true
		return ff, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, "."+what+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	layers, err := fc.Image.Layers()
	if err != nil {
		return nil, fmt.Errorf("%s %s@%s: listing layers: %w", what, ref, fc.Digest, err)
	}
	for _, f := range folders {
		rel := strings.TrimPrefix(path.Clean("/"+f), "/")
		if rel == "" {
			return nil, fmt.Errorf("%s %s: extracting the whole image is not supported: name its folders", what, ref)
		}
		dst := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return nil, err
		}
		if err := extractLayers(ctx, layers, "/"+rel, dst, o.Limits, log, nil); err != nil {
			if errors.Is(err, ErrNotFBCImage) {
				return nil, fmt.Errorf("%s %s@%s: %w: no layer holds files under /%s", what, ref, fc.Digest, ErrNoFolder, rel)
			}
			return nil, fmt.Errorf("%s %s@%s: %w", what, ref, fc.Digest, err)
		}
	}
	if err := os.RemoveAll(ff.Dir); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, ff.Dir); err != nil {
		return nil, err
	}
	if err := writeMarker(dir, fc); err != nil {
		return nil, err
	}
	return ff, nil
}
