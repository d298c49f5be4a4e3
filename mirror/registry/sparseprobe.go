package registry

import (
	"context"
	"fmt"
	"net/http"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// sparseProbe is one host's probe: done closes when the answer is known.
type sparseProbe struct {
	done    chan struct{}
	accepts bool
	refusal error // the registry's answer when it refuses
	err     error // the probe could not tell
}

// sparseProbeIndex is the index the probe pushes: one child, an image
// manifest no registry holds (its digest is of a text, not a manifest).
func sparseProbeIndex() endpoint.Manifest {
	child := []byte("airlock: a manifest that does not exist, named by the sparse index probe\n")
	raw := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"manifests":[{"mediaType":%q,"digest":%q,"size":%d,"platform":{"architecture":"amd64","os":"linux"}}]}`,
		oci.MediaTypeOCIIndex, oci.MediaTypeOCIManifest, digest.FromBytes(child), len(child))
	return endpoint.Manifest{Raw: []byte(raw), Digest: digest.FromString(raw), MediaType: oci.MediaTypeOCIIndex}
}

// AcceptsSparseIndexes reports whether the registry of repo stores an image
// index some of whose children it does not hold: what a platform subset
// (platforms: in the configuration) pushes, the index kept whole so that its
// digest is the one the cluster pulls. Distribution 2.x refuses them; so do
// registries that validate indexes. It is asked once per host and run (the
// answer is kept; concurrent callers wait for the first): the probe pushes a
// tiny sparse index by digest into repo (a scratch repository) with one
// request, no retry of a refusal, and deletes it when the registry accepted
// it (a registry that allows no deletes keeps it, untagged, until its garbage
// collection). When it refuses, refusal is the registry's answer; err is set
// when the probe could not tell (the registry failed, the caller's end).
func (r *Client) AcceptsSparseIndexes(ctx context.Context, repo string) (accepts bool, refusal, err error) {
	host, _, err := splitRepo(repo)
	if err != nil {
		return false, nil, err
	}
	hs := r.hostOf(host)
	hs.mu.Lock()
	p := hs.sparseProbe
	first := p == nil
	if first {
		p = &sparseProbe{done: make(chan struct{})}
		hs.sparseProbe = p
	}
	hs.mu.Unlock()
	if first {
		p.accepts, p.refusal, p.err = r.probeSparse(ctx, repo)
		if p.err != nil {
			hs.mu.Lock() // not answered: the next caller probes again
			hs.sparseProbe = nil
			hs.mu.Unlock()
		}
		close(p.done)
	}
	select {
	case <-p.done:
		return p.accepts, p.refusal, p.err
	case <-ctx.Done():
		return false, nil, ctx.Err()
	}
}

// probeSparse runs the probe AcceptsSparseIndexes describes.
func (r *Client) probeSparse(ctx context.Context, repo string) (accepts bool, refusal, err error) {
	idx := sparseProbeIndex()
	err = r.op(ctx, repo, "probe sparse indexes on "+endpoint.RepoHost(repo), func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, true)
		if err != nil {
			return err
		}
		resp, err := r.do(ctx, c, http.MethodPut, base+"/manifests/"+idx.Digest.String(), idx.Raw, map[string]string{"Content-Type": idx.MediaType})
		if err != nil {
			return err
		}
		defer drain(resp)
		switch resp.StatusCode {
		case http.StatusCreated, http.StatusOK, http.StatusAccepted:
			accepts = true
			return nil
		case http.StatusBadRequest, http.StatusNotFound:
			// The spec's codes for a manifest naming what the registry does
			// not hold (a 400 is a refusal of the content: not retried).
			e := statusError(resp)
			if !e.Has(endpoint.CodeManifestBlobUnknown, endpoint.CodeBlobUnknown, endpoint.CodeManifestUnknown, endpoint.CodeManifestInvalid) {
				return e
			}
			refusal = e
			return nil
		}
		return statusError(resp)
	})
	if err != nil {
		return false, nil, fmt.Errorf("probe whether %s accepts sparse image indexes: %w", endpoint.RepoHost(repo), err)
	}
	if accepts {
		if _, derr := r.DeleteManifest(ctx, repo, idx.Digest); derr != nil {
			r.log.Debug("the sparse index probe's index stays (the registry's garbage collection removes it)", "repo", repo, "digest", idx.Digest, "error", derr.Error())
		}
	}
	return accepts, refusal, nil
}
