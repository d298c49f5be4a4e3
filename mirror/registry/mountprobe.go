package registry

import (
	"context"
	"errors"
	"net/url"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// mountProbe is one host's probe: done closes when honours is known.
type mountProbe struct {
	done    chan struct{}
	honours bool
}

// honoursMountsOf tells whether the registry behind repo's host honours
// cross-repository mounts. A host that answered a mount with 201 this run
// does; otherwise it is learnt once per run and host, when the first blob
// started there is found missing, and every blob started on the host meanwhile
// waits for that answer (a few small requests, none waiting on another blob's
// transfer). So a re-run whose blobs are all held never probes. A registry
// that honours mounts answers a mount request with 201, so StartBlob can take
// a 202 to its own mount request as "not held" and skip the HEAD; one that
// ignores mounts answers 202 either way, and StartBlob asks a HEAD before it
// sends anything, so an interrupted run never sends a blob again.
//
// The probe mounts the empty JSON blob into repo from repo itself. A registry
// that holds it there and honours mounts answers 201 at once (a re-run: one
// request). Otherwise it opens an upload session; when a HEAD finds the blob
// held, the registry ignores mounts. When it is absent the probe commits it
// into that session (verified by the registry against its digest, as every
// upload) and asks again: 201 means the registry honours mounts; 202 means it
// does not. Sessions left open are cancelled. A probe that fails (the host refuses writes, is unreachable)
// leaves the HEAD in place; the blob's own requests then meet the same error.
//
// Probing after the first blob committed instead (it is free of the extra
// blob) let every blob started before that commit ask its HEAD: with 16
// images started at once, about 70 HEADs on the reference workload.
//
// A caller that holds the host's slots (endpoint.InSlot: a blob transfer
// opening a new upload for another attempt) does not wait for a probe another
// caller runs: that probe's requests may wait for the very slots it holds. It
// looks the blob up with a HEAD instead.
func (r *Client) honoursMountsOf(ctx context.Context, repo string) (bool, error) {
	host, _, err := splitRepo(repo)
	if err != nil {
		return false, err
	}
	hs := r.hostOf(host)
	hs.mu.Lock()
	if hs.mounts {
		hs.mu.Unlock()
		return true, nil // a mount answered 201: no probe needed
	}
	p := hs.mountProbe
	asked := p != nil
	if !asked {
		p = &mountProbe{done: make(chan struct{})}
		hs.mountProbe = p
	}
	hs.mu.Unlock()
	if !asked {
		p.honours = r.probeMounts(ctx, repo)
		if ctx.Err() != nil {
			// Cut short by its caller's end, not answered: the next blob
			// started on the host probes again.
			hs.mu.Lock()
			if hs.mountProbe == p {
				hs.mountProbe = nil
			}
			hs.mu.Unlock()
		}
		close(p.done)
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	if endpoint.HasSlot(ctx) {
		select {
		case <-p.done:
		default:
			return r.honoursMounts(host), nil
		}
	}
	select {
	case <-p.done:
		return p.honours || r.honoursMounts(host), nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// probeMounts runs the probe honoursMountsOf describes, retried as any
// operation (transient failures, a 429's Retry-After).
func (r *Client) probeMounts(ctx context.Context, repo string) bool {
	host, path, err := splitRepo(repo)
	if err != nil {
		return false
	}
	var honours bool
	err = r.op(ctx, repo, "probe mounts on "+host, func(ctx context.Context) error {
		var err error
		honours, err = r.mountProbeOnce(ctx, repo, path)
		return err
	})
	switch {
	case err != nil:
		r.log.Debug("mount probe failed: blobs are looked up with a HEAD before they are sent", "repo", repo, "error", err)
	case honours:
		r.noteMounts(host)
	default:
		r.log.Debug("the registry ignores cross-repository mounts: blobs are looked up with a HEAD before they are sent", "host", host)
	}
	return honours
}

// mountProbeOnce is one attempt of the probe; it leaves no session open.
func (r *Client) mountProbeOnce(ctx context.Context, repo, path string) (bool, error) {
	// The OCI empty JSON blob ("{}", the config of artifacts and of cosign's
	// attachments): two bytes whose digest every client knows.
	probeBlob := oci.EmptyJSON()
	d := endpoint.Descriptor{Digest: oci.EmptyJSONDigest, Size: int64(len(probeBlob))}
	q := url.Values{"mount": {d.Digest.String()}, "from": {path}}
	up, err := r.openUpload(ctx, repo, d, q)
	if errors.Is(err, errBlobMounted) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	// Not mounted: absent, or held by a registry that ignores mounts (then
	// it is not sent again).
	held, err := r.BlobExists(ctx, repo, d)
	if err != nil || held {
		r.cancelUpload(ctx, up.c, up.loc)
		return false, err
	}
	if err := r.commitUpload(ctx, up.c, up.loc, d, probeBlob, func(err error) error { return err }); err != nil {
		r.cancelUpload(ctx, up.c, up.loc)
		return false, err
	}
	up, err = r.openUpload(ctx, repo, d, q)
	if errors.Is(err, errBlobMounted) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	r.cancelUpload(ctx, up.c, up.loc)
	return false, nil
}
