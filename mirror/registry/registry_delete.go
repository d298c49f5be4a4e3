package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// ErrDeleteUnsupported is returned when a registry refuses deletes (Distribution
// without storage.delete.enabled answers 405 UNSUPPORTED).
var ErrDeleteUnsupported = errors.New("the registry does not allow deletes")

// ErrTagDeleteUnsupported is returned by DeleteTag when the registry cannot
// delete a tag alone: Distribution 2.x (the registry:2 image, Debian's
// docker-registry) answers DELETE /v2/NAME/manifests/TAG with 400
// DIGEST_INVALID. Deleting the manifest by digest removes its tags there.
var ErrTagDeleteUnsupported = errors.New("the registry cannot delete a tag alone (Distribution 2.x deletes manifests by digest only, with their tags)")

// maxTagPages bounds the pages of one tags/list walk.
const maxTagPages = 10000

// Tags lists the tags of repo (tags/list, following Link pagination). A
// repository the registry does not know has no tags.
func (r *Client) Tags(ctx context.Context, repo string) ([]string, error) {
	tags, complete, err := r.tagPages(ctx, repo, "", maxTagPages)
	if err == nil && !complete {
		err = fmt.Errorf("list tags of %s: more than %d pages", repo, maxTagPages)
	}
	return tags, err
}

// tagPages lists the tags of repo, reading at most pages pages (the first with
// query, e.g. "?n=1000"); complete says whether that was all of them.
func (r *Client) tagPages(ctx context.Context, repo, query string, pages int) (tags []string, complete bool, err error) {
	next := ""
	for page := 0; page < pages; page++ {
		var body struct {
			Tags []string `json:"tags"`
		}
		link := ""
		gone := false
		err := r.read(ctx, repo, "", "list tags of "+repo, func(ctx context.Context) error {
			c, base, _, err := r.client(ctx, repo, false)
			if err != nil {
				return err
			}
			u := base + "/tags/list" + query
			if next != "" {
				u = next
				if !strings.Contains(next, "://") {
					bu, perr := url.Parse(base)
					if perr != nil {
						return perr
					}
					nu, perr := bu.Parse(next)
					if perr != nil {
						return perr
					}
					u = nu.String()
				}
			}
			resp, err := r.do(ctx, c, http.MethodGet, u, nil, nil)
			if err != nil {
				return err
			}
			defer drain(resp)
			if resp.StatusCode == http.StatusNotFound {
				gone = true
				return nil
			}
			if resp.StatusCode != http.StatusOK {
				return statusError(resp)
			}
			body.Tags = nil
			if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil {
				return fmt.Errorf("decode tags/list: %w", err)
			}
			link = nextLink(resp.Header.Get("Link"))
			return nil
		})
		if err != nil {
			return nil, false, fmt.Errorf("list tags of %s: %w", repo, err)
		}
		if gone {
			return nil, true, nil
		}
		tags = append(tags, body.Tags...)
		if link == "" {
			return tags, true, nil
		}
		next = link
	}
	return tags, false, nil
}

// nextLink extracts the URL of a `Link: <URL>; rel="next"` header.
func nextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		if !strings.Contains(part, `rel="next"`) {
			continue
		}
		if i, j := strings.Index(part, "<"), strings.Index(part, ">"); i >= 0 && j > i {
			return part[i+1 : j]
		}
	}
	return ""
}

// DeleteTag removes one tag of repo (DELETE /v2/REPO/manifests/TAG, supported
// by Distribution 3, quay.io, Harbor). It reports false when the tag did not
// exist. A registry that cannot delete a tag alone gives an error wrapping
// ErrTagDeleteUnsupported; one that allows no deletes at all, an error wrapping
// ErrDeleteUnsupported.
func (r *Client) DeleteTag(ctx context.Context, repo, tag string) (bool, error) {
	if _, err := digest.Parse(tag); err == nil {
		return false, fmt.Errorf("delete tag %s:%s: a digest is not a tag (use DeleteManifest)", repo, tag)
	}
	return r.deleteManifestRef(ctx, repo, tag)
}

// DeleteManifest deletes the manifest d of repo by digest (DELETE
// /v2/REPO/manifests/DIGEST). The registry also drops the tags still pointing
// at it; the blobs stay until the registry's garbage collection. It reports false
// when the manifest was not there.
func (r *Client) DeleteManifest(ctx context.Context, repo string, d digest.Digest) (bool, error) {
	if err := d.Validate(); err != nil {
		return false, fmt.Errorf("delete manifest %s@%s: %w", repo, d, err)
	}
	return r.deleteManifestRef(ctx, repo, d.String())
}

func (r *Client) deleteManifestRef(ctx context.Context, repo, reference string) (bool, error) {
	found := true
	err := r.op(ctx, repo, "delete manifest "+repo+":"+reference, func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, true)
		if err != nil {
			return err
		}
		resp, err := r.do(ctx, c, http.MethodDelete, base+"/manifests/"+reference, nil, nil)
		if err != nil {
			return err
		}
		defer drain(resp)
		switch resp.StatusCode {
		case http.StatusAccepted, http.StatusOK, http.StatusNoContent:
			found = true
			return nil
		case http.StatusNotFound:
			found = false
			return nil
		case http.StatusMethodNotAllowed:
			return retry.Permanent(fmt.Errorf("%w: %w", ErrDeleteUnsupported, statusError(resp)))
		case http.StatusBadRequest:
			err := statusError(resp)
			if _, derr := digest.Parse(reference); derr != nil && err.Has(endpoint.CodeDigestInvalid) {
				return retry.Permanent(fmt.Errorf("%w: %w", ErrTagDeleteUnsupported, err))
			}
			return err
		}
		return statusError(resp)
	})
	if err != nil {
		return false, fmt.Errorf("delete %s:%s: %w", repo, reference, err)
	}
	return found, nil
}

// ManifestChildren lists the manifests an index (or manifest list) in repo
// refers to; an image manifest has none.
func (r *Client) ManifestChildren(ctx context.Context, repo string, d digest.Digest) ([]digest.Digest, error) {
	m, err := r.Manifest(ctx, repo, d.String())
	if err != nil {
		return nil, err
	}
	if !oci.IsIndex(m.MediaType) {
		return nil, nil
	}
	refs, err := oci.Parse(oci.Manifest(m))
	if err != nil {
		return nil, err
	}
	out := make([]digest.Digest, 0, len(refs.Manifests))
	for _, c := range refs.Manifests {
		out = append(out, c.Digest)
	}
	return out, nil
}
