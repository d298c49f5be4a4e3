package transfer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// Platform subsets in the copy engine and the estimates: of an index, only the
// children oci.Platforms.Keep keeps are copied (or counted); the index is pushed
// byte for byte, so that the digest the cluster pulls stays the one the
// cluster resources map, and the destination holds a sparse index.

// ErrSparseIndexRefused is returned (wrapped) when a destination refuses an
// index whose left-out children it does not hold.
var ErrSparseIndexRefused = errors.New("the destination refuses sparse indexes")

// ErrNoPlatform is returned (wrapped) when an index offers none of the
// platforms of a job's subset.
var ErrNoPlatform = errors.New("the index offers none of the platforms asked for")

// subset returns the children of index d that job copies: every child without
// a platform subset, else those the subset keeps. An index that offers none of
// the subset's platforms is an error naming what it offers.
func subset(job Job, d digest.Digest, children []oci.ChildManifest) ([]oci.ChildManifest, error) {
	ps := oci.Platforms(job.Platforms)
	kept := ps.Keep(children)
	if ps.All() || len(oci.Offered(children)) == 0 || ps.KeepsAPlatform(kept) {
		return kept, nil
	}
	return nil, fmt.Errorf("image %s@%s: %w: platforms %s asked for, the index has %s; change the platforms of this image's entry (or of its catalog's)",
		job.Source, d, ErrNoPlatform, strings.Join(job.Platforms, ", "), strings.Join(oci.Offered(children), ", "))
}

// putIndex pushes manifest m of job under ref. A sparse index (children left
// out) is first tried in single attempts (a few: one may only fetch a fresh
// token): a registry that checks an index's children answers 400
// MANIFEST_BLOB_UNKNOWN, which the registry client would otherwise take for a
// body altered on the way and send again and again, with its backoff. Other
// failures are left to the usual push and its retries.
func (e *copyEngine) putIndex(ctx context.Context, job Job, ref string, m endpoint.Manifest, sparse bool) error {
	for attempt := 0; sparse && attempt < 3 && ctx.Err() == nil; attempt++ {
		err := retry.Policy{}.Do(ctx, nil, "put sparse index", func(ctx context.Context) error {
			return e.dst.PutManifest(ctx, job.Dest, ref, m)
		})
		if err == nil || blobUnknown(err) {
			return err
		}
	}
	return e.dst.PutManifest(ctx, job.Dest, ref, m)
}

// blobUnknown reports a registry's 400 MANIFEST_BLOB_UNKNOWN: an index whose
// children it does not hold.
func blobUnknown(err error) bool {
	re, ok := endpoint.AsRegistryError(err)
	return ok && re.StatusCode == http.StatusBadRequest && re.Has(endpoint.CodeManifestBlobUnknown)
}

// sparseRefused explains a destination's refusal of a sparse index: registries
// that check an index's children (Distribution's default, Distribution 2.x,
// Harbor, Quay without FEATURE_SPARSE_INDEX) answer 400 MANIFEST_BLOB_UNKNOWN.
// Other errors, and full indexes, are returned as they are.
func sparseRefused(job Job, d digest.Digest, sparse bool, err error) error {
	if !sparse || !blobUnknown(err) {
		return err
	}
	return fmt.Errorf("%s refused index %s@%s, which holds only platforms %s (%w): allow sparse indexes there (Distribution 3: validation.manifests.indexes.platforms: none; Quay: FEATURE_SPARSE_INDEX: true; airlock registry serve accepts them), or remove platforms from this image's entry (or its catalog's) to copy every platform: %w",
		endpoint.RepoHost(job.Dest), job.Dest, d, strings.Join(job.Platforms, ", "), ErrSparseIndexRefused, err)
}
