package catalogimage

import (
	"context"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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
	var pkg string
	check := func(cfg *v1.ConfigFile) error {
		p, ok := cfg.Config.Labels[BundlePackageLabel]
		if !ok {
			return fmt.Errorf("%w: the image config has no label %s (is this an operator bundle image?)", ErrNotBundleImage, BundlePackageLabel)
		}
		pkg = p
		return nil
	}
	ff, err := FetchFolders(ctx, ref, workDir, "bundle", []string{"/manifests", "/metadata"}, o, check)
	if errors.Is(err, ErrNoFolder) {
		return nil, fmt.Errorf("%w: %w", ErrNotBundleImage, err)
	}
	if err != nil {
		return nil, err
	}
	return &FetchedBundle{Ref: ref, Digest: ff.Digest, PinnedRef: ff.PinnedRef(), Package: pkg, Dir: ff.Dir}, nil
}
