package registry

import (
	"sort"

	"github.com/opencontainers/go-digest"
)

// AlteredManifest is a manifest revision a registry stored altered (its body
// changed on the way: another digest than the one pushed) and refused to
// delete: once its tag is pushed again it is untagged, but still readable by
// its digest until it is deleted or the registry's garbage collection drops
// it (Distribution: `registry garbage-collect --delete-untagged`).
type AlteredManifest struct {
	Repository string        `json:"repository"`
	Digest     digest.Digest `json:"digest"`
}

// AlteredKept lists, by repository and digest, the altered revisions this
// client's pushes left because the registry refused to delete them.
func (r *Client) AlteredKept() []AlteredManifest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]AlteredManifest, 0, len(r.altered))
	for a := range r.altered {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Repository != out[j].Repository {
			return out[i].Repository < out[j].Repository
		}
		return out[i].Digest < out[j].Digest
	})
	return out
}

// keptAltered records an altered revision the registry refused to delete.
func (r *Client) keptAltered(repo string, d digest.Digest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.altered == nil {
		r.altered = map[AlteredManifest]bool{}
	}
	r.altered[AlteredManifest{repo, d}] = true
}
