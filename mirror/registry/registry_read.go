package registry

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// Manifest implements endpoint.Source. A manifest fetched by digest is verified;
// one altered or cut in transit is fetched again under the retry policy.
func (r *Client) Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	m, err := r.getManifest(ctx, repo, reference)
	if err != nil {
		err = r.missingTag(ctx, repo, reference, err)
		return endpoint.Manifest{}, fmt.Errorf("get manifest %s:%s: %w", repo, reference, err)
	}
	return m, nil
}

// getManifest reads and verifies repo:reference, or serves it from the memo
// (see manifestMemo), and keeps what it read there.
func (r *Client) getManifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	for {
		m, ok, wait, done := r.memo.claim(r.opts.KeepManifests, repo, reference)
		if ok {
			return m, nil
		}
		if wait == nil {
			defer done()
			break
		}
		select { // another caller reads it: its result, or a read of our own if it failed
		case <-wait:
		case <-ctx.Done():
			return endpoint.Manifest{}, ctx.Err()
		}
	}
	var m endpoint.Manifest
	err := r.read(ctx, repo, reference, "get manifest "+repo+":"+reference, func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, false)
		if err != nil {
			return err
		}
		resp, err := r.do(ctx, c, http.MethodGet, base+"/manifests/"+reference, nil, map[string]string{"Accept": oci.ManifestAccept})
		if err != nil {
			return err
		}
		defer drain(resp)
		if resp.StatusCode != http.StatusOK {
			return statusError(resp)
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, oci.MaxManifestSize+1))
		if err != nil {
			return err
		}
		if len(raw) > oci.MaxManifestSize {
			return fmt.Errorf("manifest %s@%s is larger than %d bytes", repo, reference, oci.MaxManifestSize)
		}
		m = endpoint.Manifest{Raw: raw, Digest: digest.FromBytes(raw), MediaType: oci.MediaTypeOf(resp.Header.Get("Content-Type"), raw)}
		if want, perr := digest.Parse(reference); perr == nil && want != m.Digest {
			return fmt.Errorf("content has digest %s: %w", m.Digest, oci.ErrDigestMismatch)
		}
		// By tag, the registry's own digest is what the body must match: a
		// manifest cut or altered on the way would otherwise be taken for a
		// different image.
		if said, perr := digest.Parse(resp.Header.Get("Docker-Content-Digest")); perr == nil && said != m.Digest {
			return fmt.Errorf("content has digest %s, the registry said %s: %w", m.Digest, said, oci.ErrDigestMismatch)
		}
		return nil
	})
	if err != nil {
		return endpoint.Manifest{}, err
	}
	r.memo.put(r.opts.KeepManifests, repo, m)
	return m, nil
}

// Blob implements endpoint.Source. When the connection breaks or the body ends
// early, the reader resumes with a Range request; each resumption is an attempt
// of the operation the read belongs to (a blob transfer), so the retry policy
// bounds them too. The caller verifies the digest.
func (r *Client) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	rc, _, err := r.BlobFrom(ctx, repo, d, 0)
	return rc, err
}

// BlobFrom implements endpoint.RangeSource: Blob from byte off, asked with
// "Range: bytes=off-". From a registry (or proxy) that ignores the Range and
// answers 200, or answers 206 with another range or a length other than the
// rest of the blob, the whole blob is read and its first off bytes dropped
// (fetched again, but what is held is never taken for something else). The
// reader starts at off either way.
func (r *Client) BlobFrom(ctx context.Context, repo string, d endpoint.Descriptor, off int64) (io.ReadCloser, int64, error) {
	if off < 0 || (d.Size >= 0 && off > d.Size) {
		return nil, 0, fmt.Errorf("get blob %s@%s from byte %d: outside its %d bytes", repo, d.Digest, off, d.Size)
	}
	br := &regBlobReader{ctx: ctx, r: r, repo: repo, d: d, off: off, attempts: retry.FromContext(ctx)}
	if br.attempts == nil {
		br.attempts = retry.NewAttempts(r.policy, r.log)
	}
	err := r.read(ctx, repo, d.Digest.String(), "get blob "+repo+"@"+d.Digest.String(), func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, false)
		if err != nil {
			return err
		}
		br.c, br.url = c, base+"/blobs/"+d.Digest.String()
		return br.open()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("get blob %s@%s: %w", repo, d.Digest, err)
	}
	return br, off, nil
}

type regBlobReader struct {
	ctx context.Context
	r   *Client
	c   *http.Client
	url string
	// redirected is where the registry sent the blob's GET (a CDN's signed
	// URL): a read resumed after a broken stream asks there first, not the
	// registry again; "" once it failed (expired, refused).
	redirected string
	repo       string
	d          endpoint.Descriptor
	body       io.ReadCloser
	off        int64
	// noRange is set once the registry answered a Range request with a
	// range that is not the rest of the blob: later reads ask for the whole
	// blob and skip the first off bytes.
	noRange  bool
	attempts *retry.Attempts
}

// open makes one request for the rest of the blob (from b.off): at the URL
// the registry redirected the first request to, when there was one (falling
// back to the registry at once when that fails), else at the registry.
func (b *regBlobReader) open() error {
	hdr := map[string]string{}
	if b.off > 0 && !b.noRange {
		hdr["Range"] = "bytes=" + strconv.FormatInt(b.off, 10) + "-"
	}
	u := b.url
	if b.off > 0 && b.redirected != "" {
		u = b.redirected
	}
	resp, err := b.r.do(b.ctx, b.c, http.MethodGet, u, nil, hdr)
	if err == nil && u != b.url && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		drain(resp)
		err = statusError(resp)
	}
	if err != nil && u != b.url {
		b.r.log.Debug("resuming a blob at its redirected URL failed: asking the registry", "repo", b.repo, "digest", b.d.Digest, "error", err.Error())
		b.redirected = ""
		return b.open()
	}
	if err != nil {
		return err
	}
	if fin := resp.Request.URL; u == b.url && fin.String() != b.url {
		b.redirected = fin.String()
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if b.off > 0 { // server ignored Range: skip what we already have
			b.r.log.Debug("the registry ignored a Range request: reading the blob's first bytes again", "repo", b.repo, "digest", b.d.Digest, "offset", b.off)
			if _, err := io.CopyN(io.Discard, resp.Body, b.off); err != nil {
				resp.Body.Close()
				return err
			}
		}
	case resp.StatusCode == http.StatusPartialContent && b.off > 0:
		rest := b.d.Size - b.off
		if !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(b.off, 10)+"-") ||
			(b.d.Size > 0 && resp.ContentLength >= 0 && resp.ContentLength != rest) {
			// A range that is not the rest of the blob: ask for the whole
			// blob and skip what is held, as from a registry ignoring Range.
			drain(resp)
			b.r.log.Debug("the registry answered a Range request with another range: reading the whole blob", "repo", b.repo, "digest", b.d.Digest, "offset", b.off,
				"contentRange", resp.Header.Get("Content-Range"), "length", resp.ContentLength, "rest", rest)
			b.noRange = true
			return b.open()
		}
	default:
		defer drain(resp)
		return statusError(resp)
	}
	b.body = resp.Body
	return nil
}

func (b *regBlobReader) Read(p []byte) (int, error) {
	for {
		if b.body == nil {
			if err := b.open(); err != nil {
				if !b.attempts.Again(b.ctx, err, "resume blob "+b.repo+"@"+b.d.Digest.String()) {
					return 0, fmt.Errorf("read blob %s@%s at byte %d: %w", b.repo, b.d.Digest, b.off, err)
				}
				continue
			}
		}
		n, err := b.body.Read(p)
		b.off += int64(n)
		if b.d.Size > 0 && b.off > b.d.Size {
			return n, fmt.Errorf("blob %s@%s is longer than its declared %d bytes: %w", b.repo, b.d.Digest, b.d.Size, oci.ErrDigestMismatch)
		}
		if err == io.EOF && b.d.Size > 0 && b.off < b.d.Size {
			err = retry.ErrShortBody
		}
		if err == nil || err == io.EOF {
			return n, err
		}
		// Broken stream: resume from b.off, as another attempt.
		b.body.Close()
		b.body = nil
		if !b.attempts.Again(b.ctx, err, "resume blob "+b.repo+"@"+b.d.Digest.String()) {
			return n, fmt.Errorf("read blob %s@%s at byte %d: %w", b.repo, b.d.Digest, b.off, err)
		}
		b.r.log.Debug("resuming blob download", "repo", b.repo, "digest", b.d.Digest, "offset", b.off, "reason", err.Error())
		if n > 0 {
			return n, nil
		}
	}
}

func (b *regBlobReader) Close() error {
	if b.body != nil {
		return b.body.Close()
	}
	return nil
}

// ManifestExists implements endpoint.Destination (HEAD, GET when the registry
// does not return a digest for a tag).
func (r *Client) ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error) {
	desc, err := r.head(ctx, repo, reference)
	if err != nil {
		if endpoint.StatusOf(err) == http.StatusNotFound {
			return false, nil
		}
		return false, err
	}
	return desc.Digest == d, nil
}

// RepositoryKnown reports whether the registry knows repo: false only when it
// answers a tag listing with 404 NAME_UNKNOWN (the distribution spec's code for
// a repository it does not hold); any other answer counts as known.
func (r *Client) RepositoryKnown(ctx context.Context, repo string) (bool, error) {
	known := true
	err := r.read(ctx, repo, "", "list tags of "+repo, func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, false)
		if err != nil {
			return err
		}
		resp, err := r.do(ctx, c, http.MethodGet, base+"/tags/list?n=1", nil, nil)
		if err != nil {
			return err
		}
		defer drain(resp)
		switch resp.StatusCode {
		case http.StatusOK:
			known = true
			return nil
		case http.StatusNotFound:
			known = !statusError(resp).Has(endpoint.CodeNameUnknown)
			return nil
		}
		return statusError(resp)
	})
	return known, err
}

// head returns the descriptor of repo:reference (HEAD, GET fallback).
func (r *Client) head(ctx context.Context, repo, reference string) (endpoint.Descriptor, error) {
	var out endpoint.Descriptor
	fallback := false
	err := r.read(ctx, repo, reference, "check manifest "+repo+":"+reference, func(ctx context.Context) error {
		c, base, _, err := r.client(ctx, repo, false)
		if err != nil {
			return err
		}
		resp, err := r.do(ctx, c, http.MethodHead, base+"/manifests/"+reference, nil, map[string]string{"Accept": oci.ManifestAccept})
		if err != nil {
			return err
		}
		drain(resp)
		switch resp.StatusCode {
		case http.StatusNotFound:
			return answerError(resp.Request, http.StatusNotFound)
		case http.StatusOK:
			dg, derr := digest.Parse(resp.Header.Get("Docker-Content-Digest"))
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if derr == nil && mt != "" && resp.ContentLength > 0 {
				out = endpoint.Descriptor{MediaType: mt, Digest: dg, Size: resp.ContentLength}
				return nil
			}
			fallback = true
			return nil
		}
		return statusError(resp)
	})
	if err != nil {
		return endpoint.Descriptor{}, fmt.Errorf("check manifest %s:%s: %w", repo, reference, err)
	}
	if !fallback {
		return out, nil
	}
	m, err := r.Manifest(ctx, repo, reference)
	if err != nil {
		return endpoint.Descriptor{}, err
	}
	return endpoint.Descriptor{MediaType: m.MediaType, Digest: m.Digest, Size: int64(len(m.Raw))}, nil
}

// Resolve returns the descriptor of an image reference ("host/path:tag" or
// "host/path@sha256:..."): a HEAD by tag, with a GET fallback; with
// Options.KeepManifests, a GET whose manifest is kept.
func (r *Client) Resolve(ctx context.Context, ref string) (endpoint.Descriptor, error) {
	repo, reference, err := splitImageRef(ref)
	if err != nil {
		return endpoint.Descriptor{}, err
	}
	var d endpoint.Descriptor
	if r.opts.KeepManifests > 0 { // one GET, kept for the stages that read it next
		var m endpoint.Manifest
		if m, err = r.getManifest(ctx, repo, reference); err != nil {
			err = fmt.Errorf("check manifest %s:%s: %w", repo, reference, err)
		}
		d = endpoint.Descriptor{MediaType: m.MediaType, Digest: m.Digest, Size: int64(len(m.Raw))}
	} else {
		d, err = r.head(ctx, repo, reference)
	}
	if err != nil {
		// Its errors name the reference; a missing tag names the tags there are.
		if mt := r.missingTag(ctx, repo, reference, err); mt != err {
			return d, fmt.Errorf("check manifest %s:%s: %w", repo, reference, mt)
		}
		return d, err
	}
	return d, nil
}

// splitImageRef splits "host/path:tag", "host/path@digest" or
// "host/path:tag@digest" (the digest wins) into repository and reference.
func splitImageRef(ref string) (repo, reference string, err error) {
	if i := strings.Index(ref, "@"); i >= 0 {
		dg, derr := digest.Parse(ref[i+1:])
		if derr != nil {
			return "", "", fmt.Errorf("image reference %q: bad digest: %w", ref, derr)
		}
		repo = ref[:i]
		if j := strings.LastIndex(repo, ":"); j > strings.LastIndex(repo, "/") {
			repo = repo[:j]
		}
		return repo, dg.String(), nil
	}
	j := strings.LastIndex(ref, ":")
	if j <= strings.LastIndex(ref, "/") {
		return ref, "latest", nil
	}
	if _, _, err := splitRepo(ref[:j]); err != nil {
		return "", "", err
	}
	return ref[:j], ref[j+1:], nil
}
