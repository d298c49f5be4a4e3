package mirror

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// Signature states of a PlanImage.
const (
	Signed   = "signed"
	Unsigned = "unsigned"
)

// Attach says what AddAttachments does besides finding attachments.
type Attach struct {
	// Signatures is the --signatures mode.
	Signatures signature.Mode
	// Policy, when set, judges the sources first (Verify): of the images,
	// and of Catalogs.
	Policy   Verifier
	Catalogs []CatalogRequest
	// Known is what earlier runs found (working-dir/attachments.json; nil:
	// nothing): images it holds are not asked about again.
	Known *signature.Record
}

// AddAttachments judges the sources by a.Policy when it is set (Verify: a
// refused image fails and carries nothing; a refused catalog fails the run),
// then looks in src for what is attached to every operator and
// additional image of the plan (signatures, attestations, SBOMs, referrers;
// catalogs are rebuilt, so theirs would not match) and adds each as an image
// of kind KindAttachment, copied to the image's destination repository by
// digest, cosign attachments under their tag. It records on each image whether
// it is signed and how many attachments it has. With signature.Required an
// image without a signature fails (and its attachments are not added); with
// signature.Off nothing is looked for. An image whose attachments could not be
// read fails with signature.Required and gets a warning otherwise. Images
// a.Known holds (what earlier runs found, by source repository and digest) are
// not asked about again. It returns what discovery cost and found, and the
// record of this plan's images to keep for the next run (nil with
// signature.Off).
func (p *Plan) AddAttachments(ctx context.Context, src endpoint.Source, a Attach, parallel int) (signature.Stats, *signature.Record, error) {
	var st signature.Stats
	if a.Policy != nil {
		if err := p.Verify(ctx, a.Policy, a.Catalogs, parallel); err != nil {
			return st, nil, err
		}
	}
	mode := a.Signatures
	if mode == signature.Off {
		return st, nil, nil
	}
	d := signature.NewDiscoverer(src)
	d.Reuse(a.Known)
	var idx []int
	for i, im := range p.Images {
		if im.Error == "" && im.Digest != "" && im.Kind.Content() && !strings.HasPrefix(im.SourceRepo, LayoutRepoPrefix) {
			idx = append(idx, i)
		}
	}
	found := make([][]signature.Found, len(idx))
	errs := make([]error, len(idx))
	if parallel <= 0 {
		parallel = 8
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for k, i := range idx {
		im := p.Images[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			found[k], errs[k] = d.Discover(ctx, signature.Image{Source: im.Source, Repo: im.SourceRepo, Digest: im.Digest, Platforms: im.Platforms})
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return st, nil, err
	}
	var unsigned []string
	added := map[string]bool{}
	for k, i := range idx {
		im := &p.Images[i]
		st.Images++
		if errs[k] != nil {
			msg := fmt.Sprintf("attachments of %s could not be read: %v", im.Source, errs[k])
			if mode == signature.Required {
				im.Error = msg
			} else {
				p.Warnings = append(p.Warnings, msg)
			}
			continue
		}
		signed := false
		for _, f := range found[k] {
			signed = signed || (f.Attachment.Subject == im.Digest && f.Attachment.IsSignature())
		}
		im.Signature, im.Attachments = Unsigned, len(found[k])
		if signed {
			im.Signature = Signed
			st.Signed++
		} else {
			unsigned = append(unsigned, im.Source)
			if mode == signature.Required {
				im.Error = fmt.Sprintf("no signature found for %s@%s (neither a cosign %s tag nor a sigstore referrer); --signatures required refuses it", im.SourceRepo, im.Digest, oci.AttachmentTag(im.Digest, oci.AttachmentSignature))
				continue
			}
		}
		for _, f := range found[k] {
			if key := im.DestRepo + "@" + f.Digest.String(); added[key] {
				continue
			} else {
				added[key] = true
			}
			a := f.Attachment
			att := PlanImage{
				Source: im.SourceRepo + "@" + f.Digest.String(), Kind: KindAttachment, Origins: im.Origins,
				SourceRepo: im.SourceRepo, Digest: f.Digest, MediaType: f.MediaType, DestRepo: im.DestRepo, Attachment: &a,
			}
			if f.Tag != "" {
				att.Tags = []string{f.Tag}
			}
			p.Images = append(p.Images, att)
			st.Attachments++
		}
	}
	st.Requests, st.Reused = d.Requests(), d.Reused()
	if len(unsigned) > 0 && mode == signature.BestEffort {
		sort.Strings(unsigned)
		p.Notes = append(p.Notes, fmt.Sprintf("%d image(s) have no signature and are mirrored without one (--signatures required would refuse them): %s", len(unsigned), listSome(unsigned, 5)))
	}
	return st, d.Record(), nil
}

func listSome(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(" and %d more (results.json lists them)", len(s)-n)
}

// Referrers groups the plan's referrers by destination repository and subject,
// for signature.KeepFindable; done says whether an image was copied (nil: all).
func (p *Plan) Referrers(done func(PlanImage) bool) []signature.Referrers {
	groups := map[string]*signature.Referrers{}
	var out []signature.Referrers
	for _, im := range p.Images {
		a := im.Attachment
		if im.Error != "" || a == nil || a.Kind != oci.AttachmentReferrer || (done != nil && !done(im)) {
			continue
		}
		key := im.DestRepo + "@" + a.Subject.String()
		g := groups[key]
		if g == nil {
			g = &signature.Referrers{Repo: im.DestRepo, Subject: a.Subject}
			groups[key] = g
		}
		g.List = append(g.List, oci.Referrer{
			Descriptor:   oci.Descriptor{MediaType: im.MediaType, Digest: im.Digest, Size: a.Size},
			ArtifactType: a.ArtifactType, Annotations: a.Annotations,
		})
	}
	for _, g := range groups {
		out = append(out, *g)
	}
	return out
}

// Owner is the source reference of the image im belongs to: its own Source,
// or, for an attachment, the image it is attached to. The history records an
// attachment as wanted for the same reasons as its image, so that deleting the
// image plans its attachments too.
func (im PlanImage) Owner() string {
	if im.Attachment != nil {
		return im.Attachment.Of
	}
	return im.Source
}

// YieldReferrersTags prepares the plan for a destination without the referrers
// API, where "sha256-<hex>" is the tag of the referrers index of the image
// with that digest: an image that has referrers is not given that tag (it is
// pushed by digest; signature.KeepFindable puts the index there once the
// referrers are copied), so that a later run does not push it back.
func (p *Plan) YieldReferrersTags() {
	subjects := map[string]bool{}
	for _, im := range p.Images {
		if a := im.Attachment; im.Error == "" && a != nil && a.Kind == oci.AttachmentReferrer {
			subjects[im.DestRepo+"@"+a.Subject.String()] = true
		}
	}
	for i := range p.Images {
		im := &p.Images[i]
		if !subjects[im.DestRepo+"@"+im.Digest.String()] {
			continue
		}
		tag := oci.ReferrersTag(im.Digest)
		im.Tags = slices.DeleteFunc(im.Tags, func(t string) bool { return t == tag })
		if len(im.Tags) == 0 {
			im.Tags = nil
		}
	}
}

// PrepareReferrers readies the plan for dst before the copy: a registry without
// the referrers API gets its "sha256-<hex>" tags yielded to referrers indexes
// (YieldReferrersTags). Plans without referrers, and destinations that are not
// registries, are left alone.
func (p *Plan) PrepareReferrers(ctx context.Context, dst endpoint.Destination) error {
	groups := p.Referrers(nil)
	if _, ok := dst.(endpoint.Referrers); !ok || len(groups) == 0 {
		return nil
	}
	api, err := signature.HasReferrersAPI(ctx, dst, groups[0].Repo, groups[0].Subject)
	if err == nil && !api {
		p.YieldReferrersTags()
	}
	return err
}

// PublishReferrers makes the referrers rep copied (nil: every referrer of the
// plan, as a sharded run's --finish has checked) findable at dst
// (signature.KeepFindable). The error says what could not be made findable:
// the referrers themselves were copied.
func (p *Plan) PublishReferrers(ctx context.Context, dst endpoint.Destination, rep *transfer.Report) error {
	var done func(PlanImage) bool
	if rep != nil {
		copied := map[string]bool{}
		for _, ir := range rep.Images {
			copied[ir.Job.Key()] = ir.Status != transfer.StatusFailed
		}
		done = func(im PlanImage) bool { return copied[im.Job().Key()] }
	}
	groups := p.Referrers(done)
	if len(groups) == 0 {
		return nil
	}
	if _, err := signature.KeepFindable(ctx, dst, groups); err != nil {
		return fmt.Errorf("referrers copied but not all findable by subject: %w", err)
	}
	return nil
}

// DropAttachments removes the attachments from the plan (disk-to-mirror with
// --signatures off: the archive carries them).
func (p *Plan) DropAttachments() {
	p.Images = slices.DeleteFunc(p.Images, func(im PlanImage) bool { return im.Kind == KindAttachment })
}
