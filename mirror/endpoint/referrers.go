package endpoint

import (
	"context"
	"errors"

	"github.com/opencontainers/go-digest"
)

// ErrReferrersUnsupported is returned (wrapped) by Referrers when the registry
// has no referrers API (it answered 404, which the distribution spec forbids a
// registry with the API to do): its referrers are found, and kept, under the
// fallback tag "sha256-<hex>" instead.
var ErrReferrersUnsupported = errors.New("registry has no referrers API")

// Referrers is implemented by sources and destinations that can list the OCI
// 1.1 referrers of a manifest (registries).
type Referrers interface {
	// Referrers returns the image index listing the manifests of repo whose
	// subject is d, or an error wrapping ErrReferrersUnsupported.
	Referrers(ctx context.Context, repo string, d digest.Digest) (Manifest, error)
}
