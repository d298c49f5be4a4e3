package catalogimage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
)

// BundlePackageLabel is the image-config label of an operator bundle image
// (registry+v1); it names the bundle's package.
const BundlePackageLabel = "operators.operatorframework.io.bundle.package.v1"

// ErrNotBundleImage is returned (wrapped) when an image is not an operator
// bundle image: it has no BundlePackageLabel, or no /manifests and /metadata.
var ErrNotBundleImage = errors.New("not an operator bundle image")

// FetchedBundle is a bundle image resolved to a digest, with its /manifests
// and /metadata folders extracted to Dir.
type FetchedBundle struct {
	// Ref is the reference as given; Digest the digest it resolved to.
	Ref    string
	Digest digest.Digest
	// PinnedRef is the reference by digest ("repo@sha256:…").
	PinnedRef string
	// Package is the value of BundlePackageLabel.
	Package string
	// Dir holds manifests/ and metadata/ as the image does.
	Dir string
}

// FetchBundle resolves the bundle image ref (a registry reference or
// "oci://PATH") through the same path as catalogs (the copy engine into an
// OCI layout under workDir, retries, digests verified) and extracts its
// /manifests and /metadata folders under workDir/bundles/<name>/<digest>/.
func FetchBundle(ctx context.Context, ref, workDir string, o FetchOptions) (*FetchedBundle, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fc, key, err := resolveImage(ctx, ref, workDir, o, "bundle", false)
	if err != nil {
		return nil, err
	}
	cfg, err := fc.Image.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("bundle %s@%s: reading the image config: %w", ref, fc.Digest, err)
	}
	pkg, ok := cfg.Config.Labels[BundlePackageLabel]
	if !ok {
		return nil, fmt.Errorf("bundle %s@%s: %w: the image config has no label %s (is this an operator bundle image?)", ref, fc.Digest, ErrNotBundleImage, BundlePackageLabel)
	}
	fb := &FetchedBundle{Ref: ref, Digest: fc.Digest, PinnedRef: fc.PinnedRef(), Package: pkg}
	dir := filepath.Join(workDir, "bundles", key, fc.Digest.Encoded())
	fb.Dir = filepath.Join(dir, "bundle")
	if st, err := os.Stat(filepath.Join(dir, completeMarker)); err == nil && st.Mode().IsRegular() {
		return fb, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, ".bundle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	layers, err := fc.Image.Layers()
	if err != nil {
		return nil, fmt.Errorf("bundle %s@%s: listing layers: %w", ref, fc.Digest, err)
	}
	for _, sub := range []string{"manifests", "metadata"} {
		dst := filepath.Join(tmp, sub)
		if err := os.Mkdir(dst, 0o755); err != nil {
			return nil, err
		}
		if err := extractLayers(ctx, layers, "/"+sub, dst, o.Limits, log, nil); err != nil {
			if errors.Is(err, ErrNotFBCImage) {
				return nil, fmt.Errorf("bundle %s@%s: %w: no layer holds files under /%s", ref, fc.Digest, ErrNotBundleImage, sub)
			}
			return nil, fmt.Errorf("bundle %s@%s: %w", ref, fc.Digest, err)
		}
	}
	if err := os.RemoveAll(fb.Dir); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, fb.Dir); err != nil {
		return nil, err
	}
	if err := writeMarker(dir, fc); err != nil {
		return nil, err
	}
	return fb, nil
}
