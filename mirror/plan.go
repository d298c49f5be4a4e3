package mirror

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// Workflow is one of the three ways airlock moves images.
type Workflow string

// The workflows.
const (
	MirrorToMirror Workflow = "mirror-to-mirror"
	MirrorToDisk   Workflow = "mirror-to-disk"
	DiskToMirror   Workflow = "disk-to-mirror"
)

// ImageKind says why an image is in the plan.
type ImageKind string

// Image kinds. Catalog images are consumed through CatalogSource/ClusterCatalog;
// operator images are bundle and related images of catalogs; generic images are
// additionalImages.
const (
	KindCatalog  ImageKind = "catalog"
	KindOperator ImageKind = "operator"
	KindGeneric  ImageKind = "generic"
	// KindAttachment is a signature, attestation, SBOM or other referrer of
	// another image of the plan (its PlanImage.Attachment says which).
	KindAttachment ImageKind = "attachment"
)

// Content reports whether images of kind k are content a source asked for
// (operator images, additional images, any other source's kind), as opposed
// to catalogs (rebuilt, consumed through CatalogSource) and attachments.
func (k ImageKind) Content() bool {
	return k != KindCatalog && k != KindAttachment && k != ""
}

// OriginAdditional is the origin of an image the configuration's
// additionalImages asked for (PlanImage.Origins).
const OriginAdditional = "additionalImages"

// LayoutRepoPrefix marks a plan source repository that is an OCI image layout on
// disk (a rebuilt catalog) rather than a registry repository: "layout:<dir>".
const LayoutRepoPrefix = "layout:"

// ImageRequest is one image a content source asks for: an additionalImages
// entry, or an image of another kind of content (its Kind groups its mirror
// rule in the cluster resources).
type ImageRequest struct {
	// Name is the source reference, tag or digest.
	Name string
	// Kind is the image's kind in the plan (KindGeneric when empty).
	Kind ImageKind
	// Origin is what asked for it (PlanImage.Origins): OriginAdditional, or
	// the content source's own name for the entry.
	Origin string
	// TargetRepo and TargetTag override the destination repository path and tag.
	TargetRepo string
	TargetTag  string
	// Platforms is the image's platform subset ("os/arch"); empty: every platform.
	Platforms []string
	// Built, when set, is an image the source built locally (a chart as an
	// OCI artifact): it is read from that OCI layout, its digest is known,
	// and Name only names it (and its destination, with TargetRepo/TargetTag).
	Built *BuiltImage
	// Error, when set, says why the source could not produce the image: it
	// is planned as failed, and the run goes on without it.
	Error string
}

// BuiltImage is an image a source built locally, in an OCI image layout.
type BuiltImage struct {
	LayoutDir string
	Digest    digest.Digest
	MediaType string
}

// PlanRequest is everything the plan is made from.
type PlanRequest struct {
	Workflow Workflow
	// Destination is "REGISTRY[:PORT][/NAMESPACE]" for the registry workflows;
	// unused for mirror-to-disk, where destinations are repository paths that
	// disk-to-mirror places under its own destination.
	Destination    string
	MaxNestedPaths int
	Catalogs       []CatalogRequest
	// Images are the images of every other kind of content, in the order
	// their sources asked (the first to ask for a reference sets its kind).
	Images []ImageRequest
	// Blocked are blockedImages regular expressions, matched against the source
	// reference and the destination reference.
	Blocked []string
	// Progress, when set, is told how many of the tag references to resolve
	// are resolved (or failed) so far.
	Progress transfer.StageProgress
	// Prefetch, when set, is given each image as soon as its digest is known
	// (blocked images never), to send its blobs while planning goes on.
	Prefetch *transfer.Prefetch
}

func (r *ImageRequest) built() *BuiltImage {
	if r == nil {
		return nil
	}
	return r.Built
}

// Resolver resolves a tag reference to the digest of its manifest.
type Resolver interface {
	Resolve(ctx context.Context, ref string) (endpoint.Descriptor, error)
}

// PlanImage is one image of the plan.
type PlanImage struct {
	// Source is the reference as the catalog or the configuration wrote it.
	Source string `json:"source"`
	// Kind is catalog, operator or generic.
	Kind ImageKind `json:"kind"`
	// Origins are the catalogs (or OriginAdditional) that asked for the image.
	Origins []string `json:"origins"`
	// SourceRepo is the repository the copy engine reads from.
	SourceRepo string `json:"sourceRepo"`
	// Digest is the manifest digest the image resolved to.
	Digest digest.Digest `json:"digest,omitempty"`
	// MediaType of the manifest, when the resolution learnt it.
	MediaType string `json:"mediaType,omitempty"`
	// DestRepo is the destination repository: "REGISTRY/NS/path" for registry
	// workflows, the repository path alone for mirror-to-disk.
	DestRepo string `json:"destRepo"`
	// Tags the manifest gets at the destination.
	Tags []string `json:"tags,omitempty"`
	// Error says why the image could not be planned (it is then not copied).
	Error string `json:"error,omitempty"`
	// Class, with Error, classifies the failure (transfer.Classify): only a
	// transient one may succeed when run again.
	Class transfer.FailureClass `json:"class,omitempty"`
	// NotArchived, with Error, marks an image disk-to-mirror wants that the
	// archive lacks because it failed when the archive was written.
	NotArchived bool `json:"notArchived,omitempty"`
	// Hint, with Error, is one short line: what happened and what to do.
	Hint string `json:"hint,omitempty"`
	// Attachment is set on attachments (KindAttachment): what they are to which image.
	Attachment *oci.Attachment `json:"attachment,omitempty"`
	// Signature is "signed" or "unsigned" once attachments were looked for
	// (--signatures best-effort or required); Attachments counts those carried.
	Signature   string `json:"signature,omitempty"`
	Attachments int    `json:"attachments,omitempty"`
	// Blobs are the configs and layers the image's manifests reference
	// (children of indexes included), recorded by --plan-only for sharding.
	Blobs []PlanBlob `json:"blobs,omitempty"`
	// Platforms is the platform subset ("os/arch") the image is copied with:
	// of an index, only those children (transfer.Job.Platforms). Empty means
	// every platform; an image several entries ask for gets the union.
	Platforms []string `json:"platforms,omitempty"`
	// Built says a source built the image locally (ImageRequest.Built): no
	// registry holds it at Source, so no mirror rule names it.
	Built bool `json:"built,omitempty"`
}

// Destination is "DestRepo:firstTag", or "DestRepo@digest" without a tag.
func (p PlanImage) Destination() string {
	if len(p.Tags) > 0 {
		return p.DestRepo + ":" + p.Tags[0]
	}
	return p.DestRepo + "@" + p.Digest.String()
}

// PlanCatalog records where a catalog went.
type PlanCatalog struct {
	Catalog      string        `json:"catalog"`
	SourceDigest digest.Digest `json:"sourceDigest,omitempty"`
	Rebuilt      bool          `json:"rebuilt"`
	Digest       digest.Digest `json:"digest"`
	DestRepo     string        `json:"destRepo"`
	Tag          string        `json:"tag"`
	Packages     []string      `json:"packages,omitempty"`
	// Platforms is the operator entry's platform subset (PlanImage.Platforms).
	Platforms []string `json:"platforms,omitempty"`
}

// Plan is what a run will copy.
type Plan struct {
	Workflow    Workflow      `json:"workflow"`
	Destination string        `json:"destination,omitempty"`
	Images      []PlanImage   `json:"images"`
	Catalogs    []PlanCatalog `json:"catalogs"`
	// Blocked are the images blockedImages removed.
	Blocked []string `json:"blocked,omitempty"`
	// Warnings are non-fatal findings (untagged references read as :latest…).
	Warnings []string `json:"warnings,omitempty"`
	// Notes are findings worth telling at info level, not problems (images
	// mirrored without a signature under --signatures best-effort).
	Notes []string `json:"notes,omitempty"`
	// Extras are files content sources need on the far side besides their
	// images, by source and file name: an archive made from the plan carries
	// them.
	Extras map[string]map[string][]byte `json:"extras,omitempty"`
}

// Jobs returns the copy jobs of every plannable image, in plan order.
func (p *Plan) Jobs() []transfer.Job {
	jobs := make([]transfer.Job, 0, len(p.Images))
	for _, im := range p.Images {
		if im.Error != "" || im.Digest == "" {
			continue
		}
		jobs = append(jobs, im.Job())
	}
	return jobs
}

// Job is what the copy engine does for the image.
func (im PlanImage) Job() transfer.Job {
	return transfer.Job{Source: im.SourceRepo, Digest: im.Digest, Dest: im.DestRepo, Tags: im.Tags, Platforms: im.Platforms}
}

// Failed returns the images that could not be planned.
func (p *Plan) Failed() []PlanImage {
	var out []PlanImage
	for _, im := range p.Images {
		if im.Error != "" {
			out = append(out, im)
		}
	}
	return out
}

// NewPlan resolves every requested image to a digest and maps it to its
// destination for the workflow. Images blockedImages matches are left out. An
// image that cannot be parsed or resolved is kept in the plan with its Error set,
// so that one bad reference never stops the run. resolve may be nil when every
// reference carries a digest (tests, disk-to-mirror).
func NewPlan(ctx context.Context, req PlanRequest, resolve Resolver, parallel int) (*Plan, error) {
	p, err := PlanImages(ctx, req, resolve, parallel)
	if err != nil {
		return nil, err
	}
	p.AddCatalogs(req)
	return p, nil
}

// PlanImages is NewPlan without the catalog images themselves: the images the
// catalogs name are planned, and AddCatalogs adds the catalogs once their
// rebuilt images exist (req.Catalogs' Rebuilt is not read here), so that
// resolving can run while the catalogs are rebuilt. Until AddCatalogs, the
// images are in request order and destination conflicts are not marked (a
// catalog takes its destination before any image).
func PlanImages(ctx context.Context, req PlanRequest, resolve Resolver, parallel int) (*Plan, error) {
	blocked := make([]*regexp.Regexp, 0, len(req.Blocked))
	for _, b := range req.Blocked {
		re, err := regexp.Compile(b)
		if err != nil {
			return nil, fmt.Errorf("blockedImages %q is not a valid regular expression: %w", b, err)
		}
		blocked = append(blocked, re)
	}
	if req.Workflow != MirrorToDisk {
		if _, _, err := splitRegistryNS(req.Destination); err != nil {
			return nil, err
		}
	}
	p := &Plan{Workflow: req.Workflow, Destination: req.Destination}
	isBlocked := func(refs ...string) bool {
		for _, re := range blocked {
			for _, r := range refs {
				if re.MatchString(location.ImageRef(r)) {
					return true
				}
			}
		}
		return false
	}

	// Bundle, related and additional images, de-duplicated by reference.
	type want struct {
		ref     string
		kind    ImageKind
		origins []string
		target  *ImageRequest
		// tags are the TargetTags of the other requests of ref with the
		// same kind: the image gets each of them too when they land in
		// the same repository (a release component shared by two
		// releases is tagged for each).
		tags      []*ImageRequest
		platforms oci.Platforms
	}
	var order []string
	wants := map[string]*want{}
	add := func(ref string, kind ImageKind, origin string, target *ImageRequest, platforms []string) {
		w, ok := wants[ref]
		if !ok {
			w = &want{ref: ref, kind: kind, platforms: platforms}
			wants[ref] = w
			order = append(order, ref)
		}
		w.platforms = w.platforms.Union(platforms)
		if kind != w.kind {
			// An image that a catalog (or another source before) also names
			// keeps its first kind and destination.
			target = nil
		}
		if target != nil {
			if w.target != nil && w.target.TargetTag != "" && target.TargetTag != "" && w.target.TargetTag != target.TargetTag {
				w.tags = append(w.tags, w.target)
			}
			w.target = target
		}
		for _, o := range w.origins {
			if o == origin {
				return
			}
		}
		w.origins = append(w.origins, origin)
	}
	for _, c := range req.Catalogs {
		for _, ref := range c.Images {
			add(ref, KindOperator, c.Catalog, nil, c.Platforms)
		}
	}
	for i := range req.Images {
		a := req.Images[i]
		if a.Kind == "" {
			a.Kind = KindGeneric
		}
		add(a.Name, a.Kind, a.Origin, &a, a.Platforms)
	}

	images := make([]PlanImage, len(order))
	for i, ref := range order {
		w := wants[ref]
		im := PlanImage{Source: ref, Kind: w.kind, Origins: w.origins, Platforms: w.platforms}
		r, err := oci.ParseReference(ref)
		if err != nil {
			im.Error = err.Error()
			images[i] = im
			continue
		}
		if r.DefaultedTag {
			p.Warnings = append(p.Warnings, fmt.Sprintf("image %q has neither tag nor digest: mirroring it as %s:latest", ref, r.Repository()))
		}
		im.SourceRepo = r.Repository()
		im.Digest = r.Digest
		if b := w.target.built(); b != nil {
			im.SourceRepo, im.Digest, im.MediaType, im.Built = LayoutRepoPrefix+b.LayoutDir, b.Digest, b.MediaType, true
		}
		dst, err := p.imageDest(req, r, w.target)
		if err != nil {
			im.Error = err.Error()
		} else {
			im.DestRepo, im.Tags = dst.Repository, []string{dst.Tag}
			for _, t := range w.tags {
				if d, err := p.imageDest(req, r, t); err == nil && d.Repository == dst.Repository && !slices.Contains(im.Tags, d.Tag) {
					im.Tags = append(im.Tags, d.Tag)
				}
			}
		}
		if w.target != nil && w.target.Error != "" {
			im.Error = w.target.Error
		}
		images[i] = im
	}

	// Drop blocked images before resolving anything.
	kept := images[:0]
	for _, im := range images {
		if isBlocked(im.Source, im.Destination()) {
			p.Blocked = append(p.Blocked, im.Source)
			continue
		}
		kept = append(kept, im)
	}
	images = kept

	// Resolve tags to digests, in parallel.
	if parallel <= 0 {
		parallel = 8
	}
	toResolve := 0
	for _, im := range images {
		if im.Error == "" && im.Digest == "" {
			toResolve++
		}
	}
	expect(resolve, images)
	prefetchPinned(req.Prefetch, images)
	count := transfer.NewCounter(req.Progress, toResolve)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range images {
		im := &images[i]
		if im.Error != "" || im.Digest != "" {
			continue
		}
		if resolve == nil {
			im.Error = "cannot resolve a tag without a registry"
			count.Add(true)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ref := im.SourceRepo + ":" + tagOf(im.Source)
			d, err := resolve.Resolve(ctx, ref)
			count.Add(err != nil)
			if err != nil {
				im.Error = fmt.Sprintf("resolve %s: %v", ref, err)
				im.Class, im.Hint = transfer.Classify(err)
				return
			}
			im.Digest, im.MediaType = d.Digest, d.MediaType
			req.Prefetch.Add(im.Job())
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.Images = append(p.Images, images...) // in request order: AddCatalogs settles them
	sort.Strings(p.Blocked)
	return p, nil
}

// settle marks destination conflicts (the first image in p.Images order keeps
// a destination) and sorts the images: catalogs, then operator images, then
// the others, each by source.
func (p *Plan) settle() {
	p.markConflicts()
	sort.SliceStable(p.Images, func(i, j int) bool {
		a, b := p.Images[i], p.Images[j]
		if a.Kind != b.Kind {
			return kindOrder(a.Kind) < kindOrder(b.Kind)
		}
		return a.Source < b.Source
	})
}

func kindOrder(k ImageKind) int {
	switch k {
	case KindCatalog:
		return 0
	case KindOperator:
		return 1
	case KindAttachment:
		return 3
	default:
		return 2
	}
}

// tagOf returns the tag of a reference ("latest" when it has none).
func tagOf(ref string) string {
	r, err := oci.ParseReference(ref)
	if err != nil || r.Tag == "" {
		return "latest"
	}
	return r.Tag
}
