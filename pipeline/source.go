package pipeline

import (
	"context"
	"slices"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/report"
	"github.com/airlock-mirror/airlock/workspace"
)

// Source is one kind of content an ImageSetConfiguration names: operator
// catalogs (mirror.operators), additional images (mirror.additionalImages);
// OpenShift releases and Helm charts join the same way. Every workflow
// (mirror-to-mirror, mirror-to-disk, disk-to-mirror, dry run, --plan-only and
// shards, delete, history, report, pinned configuration) asks each source for
// its part and names no kind: a new kind of content is one new Source.
//
// A source only selects and describes; it never copies. What it selects is
// planned (each reference resolved to a digest, placed at the destination),
// copied, archived and loaded by the same engine as every other image.
type Source interface {
	// Name names the source in messages ("operators", "additionalImages").
	Name() string
	// Owns reports whether origin (an entry of mirror.PlanImage.Origins,
	// archive.ImageRecord.Origins) is one of the source's.
	Owns(origin string) bool
	// Preflight reads and checks the source's local inputs before anything
	// moves (a file the configuration names, say) and names the registries
	// that must answer before the run starts on the connected side (an
	// unreachable one stops the run at once; registries of single images are
	// probed with planning instead, where one down fails only its images).
	Preflight(ctx context.Context) ([]Probe, error)
	// Select is the connected side: what the source asks for, from the
	// configuration and its source registries.
	Select(ctx context.Context) (*Selection, error)
	// Load is the disconnected side: what the source asks for among what an
	// archive holds (the archive was written from a Selection of the same
	// kind, perhaps with another configuration).
	Load(ctx context.Context, ar Archived) (*Loaded, error)
	// Resources are the source's own cluster resources for what was
	// mirrored (the mirror sets of its images are everyone's: the Kind of its
	// images groups them). mirrored says whether an image of p was mirrored.
	Resources(p *mirror.Plan, mirrored func(mirror.PlanImage) bool) (Resources, error)
	// Wants says why the plan holds im for origin (one of the source's), for
	// the history, the pinned configuration and delete planning.
	Wants(im mirror.PlanImage, origin string) []workspace.Want
	// Deletes reports whether the delete configuration names w, a want of
	// the source's kind (ok is false for wants of other kinds).
	Deletes(cfg *imageset.DeleteImageSetConfiguration, w workspace.Want) (names, ok bool)
	// Pin adds to pins the digests the plan resolved for the source's
	// stanza, so that the pinned configuration selects the same images.
	Pin(p *mirror.Plan, pins *imageset.Pins)
}

// Probe is a registry a run checks before anything moves: the registry of
// Ref, described as What in the message that stops the run.
type Probe struct {
	Ref, What string
}

// Selection is what a source asks for on the connected side.
type Selection struct {
	// Catalogs are images the source fetched or built itself, named at the
	// destination as catalogs are (operator catalogs).
	Catalogs []mirror.CatalogRequest
	// Images are the images to resolve, plan and copy; their Kind groups
	// their mirror rules in the cluster resources.
	Images []mirror.ImageRequest
	// Wants says why each image reference is wanted (history, pinning).
	Wants map[string][]workspace.Want
	// Warnings are findings the run reports without failing.
	Warnings []string
	// Summary are lines the run's summary shows for the source ("release
	// 4.15.2 (amd64): …"), without the leading indentation.
	Summary []string
	// Pictures are what the run's report shows beside the summary lines (a
	// release channel's update graph).
	Pictures []report.Picture
	// Extras are files the source needs on the far side besides its images,
	// by name: an archive carries them, and Load finds them in Archived.
	Extras map[string][]byte
	// LocalBlobs are OCI image layouts in the workspace holding blobs of
	// images the source asks for, read while selecting (a release payload
	// read to list its components): the run copies those blobs from there
	// instead of reading them from the registry a second time.
	LocalBlobs []string
	// Finish, when set, waits for what the source still builds (a catalog
	// image being rebuilt while planning goes on) and fills Catalogs' Rebuilt;
	// Finish(true) stops it first (the run failed). It may be called more
	// than once.
	Finish func(stop bool) error
}

// Archived is an archive as a source reads it on the disconnected side.
type Archived struct {
	// Manifest is the archive's record: the configuration it was made with,
	// its images and catalogs.
	Manifest *archive.Manifest
	// Content reads the archive's images (blobs it relies on are read from
	// the destination that holds them).
	Content endpoint.Source
	// Extras are the files the source's Selection carried, by name.
	Extras map[string][]byte
}

// Loaded is what a source asks for among an archive's content.
type Loaded struct {
	// Catalogs are the catalogs to push, as the plan records them.
	Catalogs []mirror.PlanCatalog
	// Keep returns the origins (the source's) under which the archived image
	// ir is wanted (of is ir's own image for an attachment, ir.Source
	// otherwise); none: the source does not want it.
	Keep func(ir archive.ImageRecord, of string) []string
	// Adjust, when set, changes a kept image before it is planned (a catalog
	// pruned again is read from the workspace, not the archive).
	Adjust func(im *mirror.PlanImage)
	// Missing lists what the source asks for that the archive lacks. An
	// image the archive records as failed (Manifest.Failed) is not missing:
	// disk-to-mirror reports it as failed on the connected side.
	Missing []string
	// Repruned names the catalogs pruned again because the configuration asks
	// for less than the archive holds.
	Repruned []string
	// Wants says why each image reference is wanted (history, pinning).
	Wants map[string][]workspace.Want
	// Warnings are findings the run reports without failing.
	Warnings []string
	// Summary are lines the run's summary shows (Selection.Summary).
	Summary []string
	// Pictures are the report's pictures (Selection.Pictures).
	Pictures []report.Picture
}

// Resources are a source's own cluster resources.
type Resources struct {
	// Catalogs get a CatalogSource and a ClusterCatalog each.
	Catalogs []manifests.Catalog
	// Objects are other objects the source built (manifests.Options.Objects).
	Objects []manifests.File
}

// sources returns the run's content sources, in the order their images are
// planned (the first source to name a reference sets its kind).
func (r *run) sources() []Source {
	if r.srcs == nil {
		r.srcs = []Source{&operatorSource{r: r}, &additionalSource{r: r}, &releaseSource{r: r}, &helmSource{r: r}}
		r.srcs = append(r.srcs, r.opts.sources...)
	}
	return r.srcs
}

// selected is what every source selected, put together.
type selected struct {
	sels   []*Selection
	images []mirror.ImageRequest
	// local are the sources' LocalBlobs.
	local []string
	// extras are the sources' Extras, by source name (mirror.Plan.Extras).
	extras map[string]map[string][]byte
	// finish finishes what every source still builds (Selection.Finish).
	finish func(stop bool) error
}

// selectAll asks every source what it selects, in order, and puts the
// selections together. A source that fails stops what the others still
// build.
func (r *run) selectAll(ctx context.Context) (*selected, error) {
	all := &selected{}
	var finishes []func(bool) error
	all.finish = func(stop bool) error {
		var first error
		for _, f := range finishes {
			if err := f(stop); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, s := range r.sources() {
		sel, err := s.Select(ctx)
		if err != nil {
			_ = all.finish(true)
			return nil, err
		}
		all.sels = append(all.sels, sel)
		all.images = append(all.images, sel.Images...)
		all.local = append(all.local, sel.LocalBlobs...)
		r.addWants(sel.Wants)
		r.res.Warnings = append(r.res.Warnings, sel.Warnings...)
		r.res.Sources = append(r.res.Sources, sel.Summary...)
		r.rep.pictures = append(r.rep.pictures, sel.Pictures...)
		if len(sel.Extras) > 0 {
			if all.extras == nil {
				all.extras = map[string]map[string][]byte{}
			}
			all.extras[s.Name()] = sel.Extras
		}
		if sel.Finish != nil {
			finishes = append(finishes, sel.Finish)
		}
	}
	return all, nil
}

// catalogs are the sources' catalogs; their Rebuilt is set once finish
// returned (a source fills its own Selection's).
func (s *selected) catalogs() []mirror.CatalogRequest {
	var out []mirror.CatalogRequest
	for _, sel := range s.sels {
		out = append(out, sel.Catalogs...)
	}
	return out
}

// blocked are mirror.blockedImages' patterns: they apply to every source.
func (r *run) blocked() []string {
	var out []string
	for _, b := range r.cfg.Mirror.BlockedImages {
		out = append(out, b.Name)
	}
	return out
}

// sourceOf returns the source that owns origin (nil when none does).
func sourceOf(srcs []Source, origin string) Source {
	for _, s := range srcs {
		if s.Owns(origin) {
			return s
		}
	}
	return nil
}

// addWants merges a source's wants into the run's.
func (r *run) addWants(ws map[string][]workspace.Want) {
	if len(ws) == 0 {
		return
	}
	if r.wants == nil {
		r.wants = map[string][]workspace.Want{}
	}
	for img, w := range ws {
		r.wants[img] = append(r.wants[img], w...)
	}
}

// pins are the digests every source pins for the pinned configuration.
func (r *run) pins() imageset.Pins {
	pins := imageset.Pins{Catalogs: map[string]imageset.CatalogPin{}, Images: map[string]string{}}
	for _, s := range r.sources() {
		s.Pin(r.res.Plan, &pins)
	}
	return pins
}

// DeleteNames reports whether a DeleteImageSetConfiguration names w, asking
// the source of w's kind (pipeline/deletion plans with it).
func DeleteNames(cfg *imageset.DeleteImageSetConfiguration, w workspace.Want) bool {
	return deleteNames(defaultSources(), cfg, w)
}

func deleteNames(srcs []Source, cfg *imageset.DeleteImageSetConfiguration, w workspace.Want) bool {
	for _, s := range srcs {
		if names, ok := s.Deletes(cfg, w); ok {
			return names
		}
	}
	return false
}

// defaultSources are the sources outside a run (delete planning).
func defaultSources() []Source {
	r := &run{}
	return r.sources()
}

// wantsFrom collects the wants of im from the sources of its origins,
// each once.
func wantsFrom(srcs []Source, im mirror.PlanImage) []workspace.Want {
	var out []workspace.Want
	for _, o := range im.Origins {
		s := sourceOf(srcs, o)
		if s == nil {
			continue
		}
		for _, w := range s.Wants(im, o) {
			if !slices.ContainsFunc(out, func(x workspace.Want) bool { return x.Key() == w.Key() }) {
				out = append(out, w)
			}
		}
	}
	return out
}

// Delete plans (Generate) or executes a deletion from a mirror registry
// (airlock delete): deletion.Run with the content sources' rule for which
// wants a DeleteImageSetConfiguration names.
func Delete(ctx context.Context, o deletion.Options) (*deletion.Result, error) {
	if o.Names == nil {
		o.Names = DeleteNames
	}
	return deletion.Run(ctx, o)
}
