package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Referrers implements endpoint.Referrers: GET /v2/<name>/referrers/<digest>.
// A registry that answers 404 has no referrers API (the distribution spec
// forbids a registry with it to answer 404): the error wraps
// endpoint.ErrReferrersUnsupported.
func (r *Client) Referrers(ctx context.Context, repo string, d digest.Digest) (endpoint.Manifest, error) {
	var m endpoint.Manifest
	err := r.read(ctx, repo, d.String(), "list referrers of "+repo+"@"+d.String(), func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, false)
		if err != nil {
			return err
		}
		resp, err := r.do(ctx, c, http.MethodGet, base+"/referrers/"+d.String(), nil, map[string]string{"Accept": oci.MediaTypeOCIIndex})
		if err != nil {
			return err
		}
		defer drain(resp)
		switch resp.StatusCode {
		case http.StatusNotFound:
			return endpoint.ErrReferrersUnsupported
		case http.StatusOK:
		default:
			return statusError(resp)
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, oci.MaxManifestSize+1))
		if err != nil {
			return err
		}
		if len(raw) > oci.MaxManifestSize {
			return fmt.Errorf("referrers of %s@%s: answer larger than %d bytes", repo, d, oci.MaxManifestSize)
		}
		m = endpoint.Manifest{Raw: raw, Digest: digest.FromBytes(raw), MediaType: oci.MediaTypeOCIIndex}
		return nil
	})
	if err != nil {
		return endpoint.Manifest{}, fmt.Errorf("list referrers of %s@%s: %w", repo, d, err)
	}
	return m, nil
}

// TagsUpTo lists the tags of repo when that takes at most pages pages of up to
// 1,000 tags (registries may send fewer): complete is false when there are
// more, and tags is then what was read. It serves attachment discovery, where
// asking for three tags per image is cheaper than walking a huge repository.
func (r *Client) TagsUpTo(ctx context.Context, repo string, pages int) (tags []string, complete bool, err error) {
	return r.tagPages(ctx, repo, "?n=1000", pages)
}
