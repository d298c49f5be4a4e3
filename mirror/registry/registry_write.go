package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// BlobExists implements endpoint.Destination (HEAD).
func (r *Client) BlobExists(ctx context.Context, repo string, d endpoint.Descriptor) (bool, error) {
	var found bool
	err := r.op(ctx, repo, "check blob "+repo+"@"+d.Digest.String(), func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, true)
		if err != nil {
			return err
		}
		resp, err := r.do(ctx, c, http.MethodHead, base+"/blobs/"+d.Digest.String(), nil, nil)
		if err != nil {
			return err
		}
		defer drain(resp)
		switch resp.StatusCode {
		case http.StatusOK:
			found = true
			return nil
		case http.StatusNotFound:
			found = false
			return nil
		}
		return statusError(resp)
	})
	if err != nil {
		return false, fmt.Errorf("check blob %s@%s: %w", repo, d.Digest, err)
	}
	return found, nil
}

// MountBlob implements endpoint.Destination: a cross-repository mount, possible
// only within one registry host. A refused mount returns false.
func (r *Client) MountBlob(ctx context.Context, repo, from string, d endpoint.Descriptor) (bool, error) {
	host, _, err := splitRepo(repo)
	if err != nil {
		return false, err
	}
	fhost, fpath, err := splitRepo(from)
	if err != nil || fhost != host || from == repo {
		return false, nil
	}
	var mounted bool
	err = r.op(ctx, repo, "mount blob "+d.Digest.String()+" into "+repo, func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, true)
		if err != nil {
			return err
		}
		q := url.Values{"mount": {d.Digest.String()}, "from": {fpath}}
		resp, err := r.do(ctx, c, http.MethodPost, base+"/blobs/uploads/?"+q.Encode(), nil, nil)
		if err != nil {
			return err
		}
		defer drain(resp)
		switch {
		case resp.StatusCode == http.StatusCreated:
			mounted = true
			r.noteMounts(host)
			return nil
		case resp.StatusCode == http.StatusAccepted:
			// The registry opened an upload session instead: cancel it.
			if loc, err := uploadLocation(resp); err == nil {
				r.cancelUpload(ctx, c, loc)
			}
			return nil
		case resp.StatusCode >= 400 && resp.StatusCode < 500 && !retry.RetryableStatus(resp.StatusCode):
			return nil
		}
		return statusError(resp)
	})
	if err != nil {
		return false, fmt.Errorf("mount blob %s into %s from %s: %w", d.Digest, repo, from, err)
	}
	return mounted, nil
}

func uploadLocation(resp *http.Response) (*url.URL, error) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, fmt.Errorf("registry answered %s without an upload Location", resp.Status)
	}
	u, err := resp.Request.URL.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("bad upload Location %q: %w", loc, err)
	}
	return u, nil
}

func (r *Client) cancelUpload(ctx context.Context, c *http.Client, loc *url.URL) {
	// Best effort, and bounded: Ctrl-C must not wait on an unreachable registry.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if resp, err := r.do(ctx, c, http.MethodDelete, loc.String(), nil, nil); err == nil {
		drain(resp)
	}
}

// PutBlob implements endpoint.Destination. It makes one attempt: the content
// streams from rd, which cannot be replayed, so the caller (the copy engine's blob
// transfer) retries the whole transfer. See blobUpload.Write for how it is sent.
func (r *Client) PutBlob(ctx context.Context, repo string, d endpoint.Descriptor, rd io.Reader) error {
	up, err := r.openUpload(ctx, repo, d, nil)
	if err != nil {
		return err
	}
	return up.Write(ctx, rd)
}

// StartBlob implements endpoint.Uploader: one request asks the registry to
// mount d into repo from repo itself (POST /blobs/uploads/?mount=d&from=repo).
// A registry holding d in repo answers 201 and nothing is sent (StartBlob
// returns nil); otherwise it opens the upload session (202) that the returned
// upload writes into. So a blob costs two requests (POST, PUT) instead of three
// (HEAD, POST, PUT). A registry that does not honour mounts also answers 202:
// unless the run has seen the host answer a mount with 201, the mount probe
// tells (honoursMountsOf), and on a host that ignores mounts the blob is
// looked up with a HEAD before anything is sent, as the plain path would.
func (r *Client) StartBlob(ctx context.Context, repo string, d endpoint.Descriptor) (endpoint.BlobUpload, error) {
	if err := d.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("put blob into %s: %w", repo, err)
	}
	host, path, err := splitRepo(repo)
	if err != nil {
		return nil, err
	}
	var up *blobUpload
	err = r.op(ctx, repo, "start blob "+d.Digest.String()+" in "+repo, func(ctx context.Context) error {
		q := url.Values{"mount": {d.Digest.String()}, "from": {path}}
		u, err := r.openUpload(ctx, repo, d, q)
		if errors.Is(err, errBlobMounted) {
			r.noteMounts(host)
			up = nil
			return nil
		}
		up = u
		return err
	})
	if err != nil {
		return nil, err
	}
	if up == nil {
		return nil, nil // repo holds d
	}
	honours, err := r.honoursMountsOf(ctx, repo)
	if err != nil {
		r.cancelUpload(ctx, up.c, up.loc)
		return nil, fmt.Errorf("put blob %s@%s: %w", repo, d.Digest, err)
	}
	if honours {
		return up, nil
	}
	ok, err := r.BlobExists(ctx, repo, d)
	if err != nil || ok {
		r.cancelUpload(ctx, up.c, up.loc)
		if err != nil {
			return nil, err
		}
		return nil, nil
	}
	return up, nil
}

// errBlobMounted is what openUpload returns when the registry answered a mount
// request with 201.
var errBlobMounted = errors.New("blob mounted")

// blobUpload is an open upload session (endpoint.BlobUpload).
type blobUpload struct {
	r    *Client
	c    *http.Client
	loc  *url.URL
	d    endpoint.Descriptor
	repo string
	// writes counts the Writes; reusable says the last one left the session
	// open (see endpoint.ReusableUpload).
	writes   int
	reusable bool
}

// Reusable implements endpoint.ReusableUpload.
func (u *blobUpload) Reusable() bool { return u.reusable }

// openUpload starts an upload session of d in repo (POST /blobs/uploads/, with
// the query q when it asks for a mount). One attempt, no retry.
func (r *Client) openUpload(ctx context.Context, repo string, d endpoint.Descriptor, q url.Values) (*blobUpload, error) {
	if err := d.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("put blob into %s: %w", repo, err)
	}
	c, base, _, err := r.client(ctx, repo, true)
	if err != nil {
		return nil, err
	}
	wrap := func(err error) error { return fmt.Errorf("put blob %s@%s: %w", repo, d.Digest, err) }
	u := base + "/blobs/uploads/"
	if q != nil {
		u += "?" + q.Encode()
	}
	resp, err := r.do(ctx, c, http.MethodPost, u, nil, nil)
	if err != nil {
		return nil, wrap(err)
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusAccepted:
	case http.StatusCreated:
		if q != nil {
			return nil, errBlobMounted
		}
		fallthrough
	default:
		return nil, wrap(statusError(resp))
	}
	loc, err := uploadLocation(resp)
	if err != nil {
		return nil, wrap(err)
	}
	return &blobUpload{r: r, c: c, loc: loc, d: d, repo: repo}, nil
}

// Cancel implements endpoint.BlobUpload.
func (u *blobUpload) Cancel(ctx context.Context) {
	u.reusable = false
	u.r.cancelUpload(ctx, u.c, u.loc)
}

// Write implements endpoint.BlobUpload: small blobs are read (and verified) into
// memory and sent with one PUT; bigger ones stream with PATCH through a
// verifying reader and are committed with the final PUT only when digest and
// size matched. On any error the upload session is cancelled.
func (u *blobUpload) Write(ctx context.Context, rd io.Reader) error {
	r, c, loc, d := u.r, u.c, u.loc, u.d
	v := oci.AsVerifier(rd, d)
	wrap := func(err error) error { return fmt.Errorf("put blob %s@%s: %w", u.repo, d.Digest, err) }
	again := u.writes > 0
	u.writes++
	u.reusable = false
	if d.Size >= 0 && d.Size <= r.opts.MonolithicMax {
		whole := getBuf(int(d.Size) + 1)
		buf, err := readBlob(v, whole)
		if err != nil {
			r.cancelUpload(ctx, c, loc)
			return wrap(err)
		}
		err = r.commitUpload(ctx, c, loc, d, buf, wrap)
		if err == nil {
			putBuf(whole) // the registry answered: it read the whole body
		}
		if re, ok := endpoint.AsRegistryError(err); ok {
			switch {
			case retry.RetryableStatus(re.StatusCode):
				// Refused before it was taken: the session is still open,
				// and one PUT is the whole of a next attempt.
				u.reusable = true
			case re.StatusCode == http.StatusNotFound && again:
				return wrap(fmt.Errorf("%w: %v", retry.ErrUploadGone, re))
			}
		}
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, loc.String(), v)
	if err != nil {
		return wrap(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.ContentLength = d.Size
	resp, err := c.Do(req)
	err = redactErr(typedTransportError(err))
	if v.Err() != nil { // digest or size mismatch, or a source read error
		if err == nil {
			drain(resp)
		}
		r.cancelUpload(ctx, c, loc)
		return wrap(v.Err())
	}
	if err != nil {
		r.cancelUpload(ctx, c, loc)
		return wrap(err)
	}
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusCreated {
		err := statusError(resp)
		drain(resp)
		r.cancelUpload(ctx, c, loc)
		return wrap(err)
	}
	if next, lerr := uploadLocation(resp); lerr == nil {
		loc = next
	}
	drain(resp)
	if !v.Verified() {
		r.cancelUpload(ctx, c, loc)
		return wrap(fmt.Errorf("upload ended after %d of %d bytes: %w", v.N(), d.Size, oci.ErrDigestMismatch))
	}
	return r.commitUpload(ctx, c, loc, d, nil, wrap)
}

func (r *Client) noteMounts(host string) {
	hs := r.hostOf(host)
	hs.mu.Lock()
	hs.mounts = true
	hs.mu.Unlock()
}

func (r *Client) honoursMounts(host string) bool {
	hs := r.hostOf(host)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.mounts
}

func (r *Client) commitUpload(ctx context.Context, c *http.Client, loc *url.URL, d endpoint.Descriptor, body []byte, wrap func(error) error) error {
	u := *loc
	q := u.Query()
	q.Set("digest", d.Digest.String())
	u.RawQuery = q.Encode()
	hdr := map[string]string{"Content-Type": "application/octet-stream"}
	if body == nil {
		// A streamed upload: the registry verifies and stores the whole blob
		// before it answers.
		ctx = withLongWait(ctx)
	}
	resp, err := r.do(ctx, c, http.MethodPut, u.String(), body, hdr)
	if err != nil {
		r.cancelUpload(ctx, c, loc)
		return wrap(err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusAccepted {
		return wrap(statusError(resp))
	}
	return nil
}
