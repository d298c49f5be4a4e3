package registry

import (
	"context"
	"fmt"
	"net/http"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// PutManifest implements endpoint.Destination. Nothing the registry did not
// verify is left behind, with one PUT per reference:
//
//   - the content is checked against its digest before it leaves (a manifest
//     whose bytes do not hash to m.Digest is refused here);
//   - pushed by digest (PUT /manifests/<digest>), the registry hashes what
//     arrived and refuses (400 DIGEST_INVALID) a body altered on the way, which
//     is then sent again under the retry policy;
//   - pushed under a tag (PUT /manifests/<tag>), the registry stores whatever
//     arrives, so the digest it reports (Docker-Content-Digest, or a HEAD when
//     it sends none) must be m's. When it is not, the revision that arrived
//     altered is deleted by its digest (which also drops the tag) and the tag
//     is pushed again. When the registry cannot delete it, the tag is pushed
//     again all the same, and the altered revision, untagged but readable by
//     its digest, is listed by AlteredKept for the run's results.
//
// A tag is not pushed by digest first: that would not protect the tag's own
// PUT, which the check above protects either way, and it cost every image a
// second PUT (destination requests per blob, docs/copy.md).
func (r *Client) PutManifest(ctx context.Context, repo, reference string, m endpoint.Manifest) error {
	want := digest.FromBytes(m.Raw)
	if m.Digest != "" && want != m.Digest {
		return fmt.Errorf("put manifest %s:%s: content does not match %s: %w", repo, reference, m.Digest, oci.ErrDigestMismatch)
	}
	if m.MediaType == "" {
		m.MediaType = oci.MediaTypeOf("", m.Raw)
	}
	if d, err := digest.Parse(reference); err == nil && d != want {
		return fmt.Errorf("put manifest %s@%s: content has digest %s: %w", repo, d, want, oci.ErrDigestMismatch)
	}
	return r.putVerified(ctx, repo, reference, m, want)
}

// putVerified pushes m under reference until the registry stores exactly want,
// deleting what it stored instead (see PutManifest).
func (r *Client) putVerified(ctx context.Context, repo, reference string, m endpoint.Manifest, want digest.Digest) error {
	what := "put manifest " + repo + ":" + reference
	attempts := retry.NewAttempts(r.policy, r.log)
	for {
		stored, err := r.putManifestOnce(ctx, repo, reference, m, want)
		if err != nil {
			return fmt.Errorf("put manifest %s:%s: %w", repo, reference, err)
		}
		if stored == want {
			return nil
		}
		altered := fmt.Errorf("put manifest %s:%s: the registry stored %s, not %s (the manifest was altered on the way): %w", repo, reference, stored, want, oci.ErrDigestMismatch)
		if _, derr := r.DeleteManifest(ctx, repo, stored); derr != nil {
			// The tag is pushed again all the same (it then names want); the
			// altered revision stays readable by its digest, listed for the
			// run's results (AlteredKept).
			r.keptAltered(repo, stored)
			r.log.Warn("the registry refused to delete a manifest it stored altered: pushing the tag again; the altered revision stays until the registry's garbage collection", "repo", repo, "reference", reference, "stored", stored, "want", want, "error", derr.Error())
			altered = fmt.Errorf("%w; registry %s kept the altered revision %s@%s (it refused to delete it: %v)", altered, endpoint.RepoHost(repo), repo, stored, derr)
		} else {
			r.log.Warn("deleted a manifest the registry stored altered", "repo", repo, "reference", reference, "stored", stored, "want", want)
		}
		// An outer operation (a whole transfer) decides about another attempt.
		if retry.FromContext(ctx) != nil || !attempts.Again(ctx, altered, what) {
			return altered
		}
	}
}

// putManifestOnce pushes m under reference (retrying what the policy retries:
// 5xx, resets, a registry refusing a body altered on the way) and returns the
// digest the registry says it stored.
func (r *Client) putManifestOnce(ctx context.Context, repo, reference string, m endpoint.Manifest, want digest.Digest) (digest.Digest, error) {
	var stored digest.Digest
	err := r.op(ctx, repo, "put manifest "+repo+":"+reference, func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, true)
		if err != nil {
			return err
		}
		resp, err := r.do(ctx, c, http.MethodPut, base+"/manifests/"+reference, m.Raw, map[string]string{"Content-Type": m.MediaType})
		if err != nil {
			return err
		}
		defer drain(resp)
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
			err := statusError(resp)
			if resp.StatusCode == http.StatusBadRequest {
				// The content was verified before it left: a registry refusing it
				// received something else.
				return fmt.Errorf("%w: %w", retry.ErrContentRejected, err)
			}
			return err
		}
		if d, derr := digest.Parse(resp.Header.Get("Docker-Content-Digest")); derr == nil {
			stored = d
			return nil
		}
		h, herr := r.head(ctx, repo, reference)
		if herr != nil {
			return herr
		}
		stored = h.Digest
		return nil
	})
	return stored, err
}
