package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"
)

// PushOptions says where and how to push a workload.
type PushOptions struct {
	// Registry is HOST:PORT.
	Registry string
	// Scheme is "http" (default) or "https".
	Scheme string
	// Client is the HTTP client (default: one with enough idle connections for
	// Parallel).
	Client *http.Client
	// Parallel bounds concurrent requests (default 8).
	Parallel int
	// SkipExisting asks the registry first (HEAD) and sends only what it lacks:
	// seeding is then idempotent. The ingestion floor leaves it off.
	SkipExisting bool
	// From, HOST:PORT of a registry holding the workload (same repositories,
	// same Scheme), makes Push a minimal copy: each blob it uploads is read
	// from there (one GET, streamed into the upload, not verified) instead of
	// generated. Manifests are still sent from memory.
	From string
	// Verify, with From, hashes each blob while it streams into the upload and
	// fails the upload (the request body ends in an error, so the registry
	// commits nothing) when the content does not match its digest: the least
	// a copy that verifies what it sends can cost.
	Verify bool
	// FromFile, a file PullToFile wrote for this workload, makes Push read
	// each blob from there (hashed as it streams with Verify): the floor of
	// disk-to-mirror, what the registry ingests from local disk at best.
	FromFile string
	// ToFile is the file PullToFile writes (Push ignores it).
	ToFile string
}

// PushStats counts what Push sent.
type PushStats struct {
	// Blobs uploaded, blobs mounted from another repository, blobs skipped
	// because the registry had them, manifests pushed.
	Blobs, Mounts, Skipped, Manifests int64
	// Bytes of blob content sent.
	Bytes int64
	// Requests made.
	Requests int64
}

type pusher struct {
	o     PushOptions
	base  string
	stats PushStats
	// file and offsets: where each blob is in FromFile.
	file    *os.File
	offsets map[digest.Digest]int64
}

// blobUse is a repository's use of a blob.
type blobUse struct {
	repo string
	blob *Blob
}

// blobUses returns, in order of first use, each unique blob with the first
// repository that uses it (uploads), every later repository's use of it
// (mounts), and each blob's first repository.
func (w *Workload) blobUses() (uploads, mounts []blobUse, home map[digest.Digest]string) {
	home = map[digest.Digest]string{}
	seen := map[string]bool{}
	for _, t := range w.Tags {
		for _, b := range t.Manifest.Blobs() {
			k := t.Repo + "@" + b.Digest.String()
			if seen[k] {
				continue
			}
			seen[k] = true
			if _, ok := home[b.Digest]; !ok {
				home[b.Digest] = t.Repo
				uploads = append(uploads, blobUse{t.Repo, b})
			} else {
				mounts = append(mounts, blobUse{t.Repo, b})
			}
		}
	}
	return uploads, mounts, home
}

// Push sends the workload to a registry: every unique blob once (to the first
// repository that uses it), a cross-repository mount for every other
// repository that uses it, then every manifest (an index's children by digest
// before the index), each by tag. Each phase runs Parallel requests at a time.
func (w *Workload) Push(ctx context.Context, o PushOptions) (PushStats, error) {
	if o.Registry == "" {
		return PushStats{}, errors.New("push workload: no registry: give HOST:PORT")
	}
	o.defaults()
	p := &pusher{o: o, base: o.Scheme + "://" + o.Registry}

	if o.FromFile != "" {
		f, err := os.Open(o.FromFile)
		if err != nil {
			return PushStats{}, err
		}
		defer f.Close()
		p.file, p.offsets = f, w.fileOffsets()
	}
	uploads, mounts, home := w.blobUses()
	run := func(n int, f func(ctx context.Context, i int) error) error {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(o.Parallel)
		for i := range n {
			g.Go(func() error { return f(gctx, i) })
		}
		return g.Wait()
	}
	if err := run(len(uploads), func(ctx context.Context, i int) error {
		return p.blob(ctx, uploads[i].repo, uploads[i].blob, "")
	}); err != nil {
		return p.snapshot(), err
	}
	if err := run(len(mounts), func(ctx context.Context, i int) error {
		return p.blob(ctx, mounts[i].repo, mounts[i].blob, home[mounts[i].blob.Digest])
	}); err != nil {
		return p.snapshot(), err
	}
	// Children by digest, then every tag.
	type use struct{ repo string }
	var kids []use
	var kidManifests []*Manifest
	kidSeen := map[string]bool{}
	for _, t := range w.Tags {
		for _, c := range t.Manifest.Children {
			if k := t.Repo + "@" + c.Digest.String(); !kidSeen[k] {
				kidSeen[k] = true
				kids = append(kids, use{repo: t.Repo})
				kidManifests = append(kidManifests, c)
			}
		}
	}
	if err := run(len(kids), func(ctx context.Context, i int) error {
		return p.manifest(ctx, kids[i].repo, kidManifests[i].Digest.String(), kidManifests[i])
	}); err != nil {
		return p.snapshot(), err
	}
	err := run(len(w.Tags), func(ctx context.Context, i int) error {
		t := w.Tags[i]
		return p.manifest(ctx, t.Repo, t.Tag, t.Manifest)
	})
	return p.snapshot(), err
}

func (p *pusher) snapshot() PushStats {
	return PushStats{
		Blobs: atomic.LoadInt64(&p.stats.Blobs), Mounts: atomic.LoadInt64(&p.stats.Mounts),
		Skipped: atomic.LoadInt64(&p.stats.Skipped), Manifests: atomic.LoadInt64(&p.stats.Manifests),
		Bytes: atomic.LoadInt64(&p.stats.Bytes), Requests: atomic.LoadInt64(&p.stats.Requests),
	}
}

func (p *pusher) do(req *http.Request) (*http.Response, error) {
	atomic.AddInt64(&p.stats.Requests, 1)
	return p.o.Client.Do(req)
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func statusErr(what string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	return fmt.Errorf("%s: registry answered %s: %s", what, resp.Status, strings.TrimSpace(string(b)))
}

// exists HEADs path and reports whether the registry answered 200.
func (p *pusher) exists(ctx context.Context, path string, accept string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, p.base+path, nil)
	if err != nil {
		return false, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := p.do(req)
	if err != nil {
		return false, err
	}
	drain(resp)
	return resp.StatusCode == http.StatusOK, nil
}

// blob puts b into repo: a mount from `from` when set, else (or when the
// registry declines the mount) a monolithic upload (POST, then PUT with the
// whole body).
func (p *pusher) blob(ctx context.Context, repo string, b *Blob, from string) error {
	what := fmt.Sprintf("push blob %s to %s", b.Digest, repo)
	if p.o.SkipExisting {
		ok, err := p.exists(ctx, "/v2/"+repo+"/blobs/"+b.Digest.String(), "")
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			atomic.AddInt64(&p.stats.Skipped, 1)
			return nil
		}
	}
	u := p.base + "/v2/" + repo + "/blobs/uploads/"
	if from != "" {
		u += "?mount=" + url.QueryEscape(b.Digest.String()) + "&from=" + url.QueryEscape(from)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	resp, err := p.do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch resp.StatusCode {
	case http.StatusCreated:
		drain(resp)
		atomic.AddInt64(&p.stats.Mounts, 1)
		return nil
	case http.StatusAccepted:
		drain(resp)
	default:
		return statusErr(what, resp)
	}
	loc, err := resp.Location()
	if err != nil {
		return fmt.Errorf("%s: upload without a location: %w", what, err)
	}
	q := loc.Query()
	q.Set("digest", b.Digest.String())
	loc.RawQuery = q.Encode()
	var body io.ReadCloser
	switch {
	case p.file != nil:
		body = io.NopCloser(io.NewSectionReader(p.file, p.offsets[b.Digest], b.Size))
		if p.o.Verify {
			body = newVerifying(body, b.Digest, b.Size)
		}
	case p.o.From != "":
		if body, err = p.pull(ctx, repo, b); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if p.o.Verify {
			body = newVerifying(body, b.Digest, b.Size)
		}
	default:
		body = b.Open()
	}
	defer body.Close()
	req, err = http.NewRequestWithContext(ctx, http.MethodPut, loc.String(), body)
	if err != nil {
		return err
	}
	req.ContentLength = b.Size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err = p.do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode != http.StatusCreated {
		return statusErr(what, resp)
	}
	drain(resp)
	atomic.AddInt64(&p.stats.Blobs, 1)
	atomic.AddInt64(&p.stats.Bytes, b.Size)
	return nil
}

var manifestAccept = strings.Join([]string{MediaDockerManifest, MediaDockerList, MediaOCIManifest, MediaOCIIndex}, ",")

func (p *pusher) manifest(ctx context.Context, repo, ref string, m *Manifest) error {
	what := fmt.Sprintf("push manifest %s:%s", repo, ref)
	path := "/v2/" + repo + "/manifests/" + ref
	if p.o.SkipExisting {
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, p.base+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", manifestAccept)
		resp, err := p.do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		drain(resp)
		if resp.StatusCode == http.StatusOK && resp.Header.Get("Docker-Content-Digest") == m.Digest.String() {
			return nil
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.base+path, bytes.NewReader(m.Raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", m.MediaType)
	resp, err := p.do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if resp.StatusCode != http.StatusCreated {
		return statusErr(what, resp)
	}
	drain(resp)
	atomic.AddInt64(&p.stats.Manifests, 1)
	return nil
}

// pull opens blob b of repo at the From registry.
func (p *pusher) pull(ctx context.Context, repo string, b *Blob) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.o.Scheme+"://"+p.o.From+"/v2/"+repo+"/blobs/"+b.Digest.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusErr("pull blob "+b.Digest.String()+" from "+p.o.From+"/"+repo, resp)
	}
	return resp.Body, nil
}

// requestTimeout bounds each request of the floor clients: no bench run waits
// forever on a stalled registry (the largest blob of a workload takes seconds).
const requestTimeout = 10 * time.Minute

// defaults fills what PushOptions leaves out: plain HTTP, 8 requests at a
// time, and a client with a deadline per request.
func (o *PushOptions) defaults() {
	if o.Scheme == "" {
		o.Scheme = "http"
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: requestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: o.Parallel * 2, DisableCompression: true}}
	}
}
