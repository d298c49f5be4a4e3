package signature

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Mode is --signatures: what to do about attachments and images without a
// signature.
type Mode string

// The modes.
const (
	// BestEffort carries what exists and lists the images without a signature.
	BestEffort Mode = "best-effort"
	// Required carries what exists and fails the images without a signature.
	Required Mode = "required"
	// Off carries no attachment (oc-mirror's --remove-signatures).
	Off Mode = "off"
)

// ParseMode reads a --signatures value ("" is BestEffort).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return BestEffort, nil
	case BestEffort, Required, Off:
		return m, nil
	}
	return "", fmt.Errorf("--signatures %q: use best-effort, required or off", s)
}

// TagLister is implemented by sources that can list a repository's tags (a
// registry): one listing then replaces three manifest requests per image.
type TagLister = endpoint.TagLister

// maxTagPages bounds a repository's tag listing: a repository with more tags
// (tens of thousands) is asked for each attachment tag instead.
const maxTagPages = 5

// Image is an image whose attachments are wanted.
type Image struct {
	// Source names the image (recorded as each attachment's Of).
	Source string
	Repo   string
	Digest digest.Digest
	// Platforms is the image's platform subset ("os/arch"): the attachments of
	// the children it leaves out are not looked for. Empty: every child.
	Platforms []string
}

// Found is one attachment: a manifest of the image's repository.
type Found struct {
	Digest    digest.Digest `json:"digest"`
	MediaType string        `json:"mediaType,omitempty"`
	// Tag is the cosign tag ("sha256-<hex>.sig"); "" for a referrer, which is
	// kept by digest.
	Tag        string         `json:"tag,omitempty"`
	Attachment oci.Attachment `json:"attachment"`
}

// Stats count what discovery cost and found.
type Stats struct {
	Images      int   `json:"images"`
	Signed      int   `json:"signed"`
	Attachments int   `json:"attachments"`
	Requests    int64 `json:"requests"`
	// Reused counts the images answered from the earlier runs' record
	// (Discoverer.Reuse), without a request.
	Reused int64 `json:"reused,omitempty"`
}

// maxDepth bounds attachments of attachments (a signature of an SBOM of a
// signature…).
const maxDepth = 3

// Discoverer finds attachments in a source. It is safe for concurrent use and
// asks each repository for its tags, and each host whether it has the
// referrers API, at most once.
type Discoverer struct {
	src      endpoint.Source
	requests atomic.Int64

	mu   sync.Mutex
	tags map[string]*repoTags
	api  map[string]*hostAPI // whether each host has the referrers API

	known  *Record                  // earlier runs' findings (Reuse)
	found  map[string]RecordedImage // this run's, by "repo@digest" (Record)
	learnt bool                     // remember was called: found holds what known does not
	reused atomic.Int64
	now    func() time.Time
}

type repoTags struct {
	once sync.Once
	set  map[string]bool // nil: the tags could not be listed
}

// NewDiscoverer returns a Discoverer reading src.
func NewDiscoverer(src endpoint.Source) *Discoverer {
	return &Discoverer{src: src, tags: map[string]*repoTags{}, api: map[string]*hostAPI{}, found: map[string]RecordedImage{}, now: time.Now}
}

// Requests is how many requests discovery made so far.
func (d *Discoverer) Requests() int64 { return d.requests.Load() }

// Discover returns every attachment of im: those of its digest, of each child
// when it is an index (each child of im.Platforms), and of the attachments
// themselves, each once. An image the reused record holds (Reuse) is answered
// from it, without a request.
func (d *Discoverer) Discover(ctx context.Context, im Image) ([]Found, error) {
	if found, ok := d.recorded(im); ok {
		return found, nil
	}
	found, err := d.discover(ctx, im)
	if err == nil {
		d.remember(im, found)
	}
	return found, err
}

func (d *Discoverer) discover(ctx context.Context, im Image) ([]Found, error) {
	// One tag listing per repository answers for every image in it on a
	// host without the referrers API: attachments of the image, of its
	// children and of attachments all live in the repository under
	// "sha256-<hex>" tags (cosign's and the referrers fallback's). None
	// there: nothing to find, and the manifest need not be read.
	if tags := d.repoTags(ctx, im.Repo); tags != nil && len(tags) == 0 {
		lacks, err := d.lacksAPI(ctx, endpoint.RepoHost(im.Repo))
		if err != nil {
			return nil, err
		}
		if lacks {
			return nil, nil
		}
	}
	d.requests.Add(1)
	m, err := d.src.Manifest(ctx, im.Repo, im.Digest.String())
	if err != nil {
		return nil, err
	}
	subjects := []digest.Digest{im.Digest}
	if oci.IsIndex(m.MediaType) {
		refs, err := oci.Parse(oci.Manifest(m))
		if err != nil {
			return nil, err
		}
		for _, c := range oci.Platforms(im.Platforms).Keep(refs.Manifests) {
			subjects = append(subjects, c.Digest)
		}
	}
	seen := map[digest.Digest]bool{}
	for _, s := range subjects {
		seen[s] = true
	}
	var out []Found
	for depth := 0; depth <= maxDepth && len(subjects) > 0; depth++ {
		var next []digest.Digest
		for _, s := range subjects {
			found, err := d.of(ctx, im, s)
			if err != nil {
				return nil, err
			}
			for _, f := range found {
				if seen[f.Digest] {
					continue
				}
				seen[f.Digest] = true
				out = append(out, f)
				next = append(next, f.Digest)
			}
		}
		subjects = next
	}
	return out, nil
}

// of returns the attachments of subject s in im.Repo (not recursively).
func (d *Discoverer) of(ctx context.Context, im Image, s digest.Digest) ([]Found, error) {
	var out []Found
	tags := d.repoTags(ctx, im.Repo)
	for _, suffix := range oci.TagSuffixes {
		tag := oci.AttachmentTag(s, suffix)
		if tags != nil && !tags[tag] {
			continue
		}
		m, ok, err := d.manifest(ctx, im.Repo, tag)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, Found{Digest: m.Digest, MediaType: m.MediaType, Tag: tag,
				Attachment: oci.Attachment{Of: im.Source, Subject: s, Kind: suffix, Size: int64(len(m.Raw))}})
		}
	}
	refs, err := d.referrers(ctx, im.Repo, s, tags)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		if !oci.IsManifestType(r.MediaType) {
			continue
		}
		out = append(out, Found{Digest: r.Digest, MediaType: r.MediaType,
			Attachment: oci.Attachment{Of: im.Source, Subject: s, Kind: oci.AttachmentReferrer, Size: r.Size,
				ArtifactType: r.ArtifactType, Annotations: r.Annotations}})
	}
	return out, nil
}

// referrers lists the referrers of s: through the API where the host has it,
// else from the fallback tag (an index that is not s itself: airlock tags a
// digest-only image with the same "sha256-<hex>").
func (d *Discoverer) referrers(ctx context.Context, repo string, s digest.Digest, tags map[string]bool) ([]oci.ChildManifest, error) {
	m, asked, err := d.askAPI(ctx, repo, s)
	if err != nil {
		return nil, err
	}
	if asked {
		refs, err := oci.Parse(oci.Manifest(m))
		if err != nil {
			return nil, fmt.Errorf("referrers of %s@%s: %w", repo, s, err)
		}
		return refs.Manifests, nil
	}
	tag := oci.ReferrersTag(s)
	if tags != nil && !tags[tag] {
		return nil, nil
	}
	m, ok, err := d.manifest(ctx, repo, tag)
	if err != nil || !ok || m.Digest == s || !oci.IsIndex(m.MediaType) {
		return nil, err
	}
	refs, err := oci.Parse(oci.Manifest(m))
	if err != nil {
		return nil, fmt.Errorf("referrers index %s:%s: %w", repo, tag, err)
	}
	return refs.Manifests, nil
}

// hostAPI is what a host answered about the referrers API. The first
// question to a host is asked alone: the images discovered beside it wait
// for its answer rather than each learning, with a request of its own, that
// the host has no API.
type hostAPI struct {
	known, lacks bool
	asking       chan struct{} // closed when the question being asked is answered
}

// askAPI asks the referrers API of repo's host for the referrers of s; asked
// is false (with no request) when the source or its host has no API.
func (d *Discoverer) askAPI(ctx context.Context, repo string, s digest.Digest) (m endpoint.Manifest, asked bool, err error) {
	api, ok := d.src.(endpoint.Referrers)
	if !ok {
		return m, false, nil
	}
	host := endpoint.RepoHost(repo)
	d.mu.Lock()
	h := d.api[host]
	if h == nil {
		h = &hostAPI{}
		d.api[host] = h
	}
	for !h.known && h.asking != nil {
		ch := h.asking
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return m, false, ctx.Err()
		}
		d.mu.Lock()
	}
	if h.known && h.lacks {
		d.mu.Unlock()
		return m, false, nil
	}
	var done chan struct{}
	if !h.known { // this caller asks the host's first question
		done = make(chan struct{})
		h.asking = done
	}
	d.mu.Unlock()
	d.requests.Add(1)
	m, err = api.Referrers(ctx, repo, s)
	if done != nil {
		d.mu.Lock()
		switch {
		case err == nil:
			h.known = true
		case errors.Is(err, endpoint.ErrReferrersUnsupported):
			h.known, h.lacks = true, true
		}
		h.asking = nil
		close(done)
		d.mu.Unlock()
	}
	if errors.Is(err, endpoint.ErrReferrersUnsupported) {
		return m, false, nil
	}
	return m, err == nil, err
}

// lacksAPI reports whether host is known to have no referrers API, waiting
// for the answer to a question being asked; false while nobody has asked.
// A source that is no registry (no endpoint.Referrers) lacks it.
func (d *Discoverer) lacksAPI(ctx context.Context, host string) (bool, error) {
	if _, ok := d.src.(endpoint.Referrers); !ok {
		return true, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		h := d.api[host]
		if h == nil || (!h.known && h.asking == nil) {
			return false, nil
		}
		if h.known {
			return h.lacks, nil
		}
		ch := h.asking
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			d.mu.Lock()
			return false, ctx.Err()
		}
		d.mu.Lock()
	}
}

// repoTags returns repo's tags that can name attachments (nil when the source
// cannot list them: every tag is then asked for).
func (d *Discoverer) repoTags(ctx context.Context, repo string) map[string]bool {
	tl, ok := d.src.(TagLister)
	if !ok {
		return nil
	}
	d.mu.Lock()
	rt := d.tags[repo]
	if rt == nil {
		rt = &repoTags{}
		d.tags[repo] = rt
	}
	d.mu.Unlock()
	rt.once.Do(func() {
		d.requests.Add(1)
		tags, complete, err := tl.TagsUpTo(ctx, repo, maxTagPages)
		if err != nil || !complete {
			return
		}
		rt.set = map[string]bool{}
		for _, t := range tags {
			if strings.HasPrefix(t, "sha256-") {
				rt.set[t] = true
			}
		}
	})
	return rt.set
}

// manifest fetches repo:tag; ok is false when the registry does not have it.
func (d *Discoverer) manifest(ctx context.Context, repo, tag string) (endpoint.Manifest, bool, error) {
	d.requests.Add(1)
	m, err := d.src.Manifest(ctx, repo, tag)
	if err == nil {
		return m, true, nil
	}
	if NotFound(err) {
		return endpoint.Manifest{}, false, nil
	}
	return endpoint.Manifest{}, false, err
}

// NotFound reports whether err is a registry's 404.
func NotFound(err error) bool {
	return endpoint.StatusOf(err) == http.StatusNotFound
}
