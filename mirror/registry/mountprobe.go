package registry

import (
	"context"
	"errors"
	"net/url"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// probeMounts learns, once per run and host, whether the registry honours
// cross-repository mounts, right after the first blob this run committed there
// (d, in repo): it asks to mount d into repo from repo itself, one request. A
// registry that honours mounts answers 201, and from then on StartBlob takes a
// 202 to its mount request as "not held" and asks no HEAD. One that does not
// opens an upload session instead (202), which is cancelled: StartBlob keeps
// asking with a HEAD before it sends anything. Without the probe a first run
// learns it only from its first mount across repositories, and asks a HEAD for
// every new blob until then.
func (r *Client) probeMounts(ctx context.Context, repo string, d endpoint.Descriptor) {
	host, path, err := splitRepo(repo)
	if err != nil {
		return
	}
	r.mu.Lock()
	_, asked := r.mounts[host]
	if !asked {
		r.mounts[host] = false // probed (or being probed): at most once
	}
	r.mu.Unlock()
	if asked {
		return
	}
	up, err := r.openUpload(ctx, repo, d, url.Values{"mount": {d.Digest.String()}, "from": {path}})
	switch {
	case errors.Is(err, errBlobMounted):
		r.noteMounts(host)
	case err == nil:
		r.cancelUpload(ctx, up.c, up.loc)
	default:
		r.log.Debug("mount probe failed: blobs are looked up with a HEAD before they are sent", "repo", repo, "error", err)
	}
}
