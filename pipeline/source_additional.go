package pipeline

import (
	"context"
	"slices"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/workspace"
)

// additionalSource is mirror.additionalImages: each image as named (its
// targetRepo and targetTag honoured), grouped with the generic mirror sets.
// Its origin is mirror.OriginAdditional.
type additionalSource struct {
	r *run
}

func (s *additionalSource) Name() string { return "additionalImages" }

func (s *additionalSource) Owns(origin string) bool { return origin == mirror.OriginAdditional }

// Preflight names no registry: one that cannot be reached fails its images,
// not the run (they are probed with planning).
func (s *additionalSource) Preflight(context.Context) ([]Probe, error) { return nil, nil }

func (s *additionalSource) Select(context.Context) (*Selection, error) {
	sel := &Selection{}
	for _, im := range s.r.cfg.Mirror.AdditionalImages {
		sel.Images = append(sel.Images, mirror.ImageRequest{
			Name: im.Ref(), Kind: mirror.KindGeneric, Origin: mirror.OriginAdditional,
			TargetRepo: im.TargetRepo, TargetTag: im.TargetTag, Platforms: imageset.PlatformList(im.Platforms),
		})
	}
	return sel, nil
}

// Load keeps the archived images the configuration names (with their
// attachments); one it names that the archive lacks is missing, unless
// blockedImages matches it: mirror-to-disk left it out by the same rule.
func (s *additionalSource) Load(_ context.Context, ar Archived) (*Loaded, error) {
	isBlocked := mirror.BlockedMatcher(s.r.blocked())
	want := map[string]bool{}
	for _, im := range s.r.cfg.Mirror.AdditionalImages {
		want[im.Ref()] = true
	}
	seen := map[string]bool{}
	for _, ir := range ar.Manifest.Images {
		of := ir.Source
		if ir.Attachment != nil {
			of = ir.Attachment.Of
		}
		seen[of] = true
	}
	for _, f := range ar.Manifest.Failed {
		seen[f.Source] = true // reported as failed on the connected side
	}
	out := &Loaded{Keep: func(_ archive.ImageRecord, of string) []string {
		if want[of] {
			return []string{mirror.OriginAdditional}
		}
		return nil
	}}
	for _, im := range s.r.cfg.Mirror.AdditionalImages {
		if !seen[im.Ref()] && !isBlocked(im.Ref()) {
			out.Missing = append(out.Missing, "additional image "+im.Ref()+" (not in the archive)")
		}
	}
	return out, nil
}

// Resources: none of its own (its images are in the generic mirror sets).
func (s *additionalSource) Resources(*mirror.Plan, func(mirror.PlanImage) bool) (Resources, error) {
	return Resources{}, nil
}

func (s *additionalSource) Wants(im mirror.PlanImage, _ string) []workspace.Want {
	return []workspace.Want{{Kind: workspace.WantAdditional, Image: im.Owner()}}
}

// Pin pins each additional image to the digest it resolved to.
func (s *additionalSource) Pin(p *mirror.Plan, pins *imageset.Pins) {
	for _, im := range p.Images {
		if slices.Contains(im.Origins, mirror.OriginAdditional) {
			pins.Images[im.Source] = im.Digest.String()
		}
	}
}

// Deletes: delete.additionalImages names the image.
func (s *additionalSource) Deletes(cfg *imageset.DeleteImageSetConfiguration, w workspace.Want) (bool, bool) {
	if w.Kind != workspace.WantAdditional {
		return false, false
	}
	for _, im := range cfg.Delete.AdditionalImages {
		if im.Ref() == w.Image {
			return true, true
		}
	}
	return false, true
}
