package pipeline

import (
	"context"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// yieldReferrersTags gives the "sha256-<hex>" tag of an image with referrers
// to its referrers index when dst is a registry without the referrers API
// (mirror.Plan.YieldReferrersTags).
func (r *run) yieldReferrersTags(ctx context.Context, dst endpoint.Destination) error {
	groups := r.res.Plan.Referrers(nil)
	if _, ok := dst.(endpoint.Referrers); !ok || len(groups) == 0 {
		return nil
	}
	api, err := signature.HasReferrersAPI(ctx, dst, groups[0].Repo, groups[0].Subject)
	if err == nil && !api {
		r.res.Plan.YieldReferrersTags()
	}
	return err
}

// keepReferrersFindable makes the referrers the copy pushed findable at a
// registry without the referrers API (signature.KeepFindable); a failure is a
// warning: the referrers themselves are there.
func (r *run) keepReferrersFindable(ctx context.Context, dst endpoint.Destination, rep *transfer.Report) {
	copied := map[string]bool{}
	for _, ir := range rep.Images {
		copied[ir.Job.Key()] = ir.Status != transfer.StatusFailed
	}
	groups := r.res.Plan.Referrers(func(im mirror.PlanImage) bool { return copied[im.Job().Key()] })
	if len(groups) == 0 {
		return
	}
	st, err := signature.KeepFindable(ctx, dst, groups)
	r.log.Debug("referrers", "subjects", len(groups), "withAPI", st.WithAPI, "fallbackIndexes", st.Indexes)
	if err != nil {
		w := "referrers copied but not all findable by subject: " + err.Error()
		r.log.Warn(w)
		r.res.Warnings = append(r.res.Warnings, w)
	}
}

// dropAttachmentsIfOff drops the attachments of a plan with --signatures off
// (disk-to-mirror: the archive carries them).
func (r *run) dropAttachmentsIfOff(p *mirror.Plan) {
	if r.opts.Signatures != signature.Off {
		return
	}
	kept := p.Images[:0]
	for _, im := range p.Images {
		if im.Kind != mirror.KindAttachment {
			kept = append(kept, im)
		}
	}
	p.Images = kept
}
