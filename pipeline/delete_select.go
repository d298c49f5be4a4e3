package pipeline

import (
	"fmt"
	"regexp"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/prune"
)

type candidate struct {
	e   *invEntry
	why []string
}

func staleCandidates(inv *inventory, plan *DeletePlan) []*candidate {
	var out []*candidate
	for _, k := range inv.keys() {
		e := inv.present[k]
		cur := inv.current[k]
		if len(cur) == 0 {
			out = append(out, &candidate{e: e, why: []string{fmt.Sprintf("last selected by run %d as %s; no current selection wants it", e.lastRun, wantList(lastWants(inv.wants[k], e.lastRun)))}})
			continue
		}
		// Still wanted: worth saying when it lost a reason on the way.
		curKeys := map[string]bool{}
		for _, w := range cur {
			curKeys[w.w.Key()] = true
		}
		var lost []runWant
		for _, w := range inv.wants[k] {
			if !curKeys[w.w.Key()] {
				lost = append(lost, w)
			}
		}
		if len(lost) > 0 {
			plan.Kept = append(plan.Kept, KeptManifest{Repository: e.repo, Digest: e.digest, Source: e.source, Why: []string{
				"no longer wanted as " + wantList(lost),
				fmt.Sprintf("still wanted by run %d as %s", cur[0].seq, wantList(cur)),
			}})
		}
	}
	return out
}

func lastWants(ws []runWant, seq int) []runWant {
	var out []runWant
	for _, w := range ws {
		if w.seq == seq {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return ws
	}
	return out
}

func configCandidates(inv *inventory, cfg *imageset.DeleteImageSetConfiguration, plan *DeletePlan) ([]*candidate, error) {
	blocked, err := cfg.BlockedPatterns()
	if err != nil {
		return nil, err
	}
	m := deleteMatcher{cfg: cfg}
	var out []*candidate
	for _, k := range inv.keys() {
		e := inv.present[k]
		var matched []runWant
		for _, w := range inv.wants[k] {
			if m.match(w.w) {
				matched = append(matched, w)
			}
		}
		if len(matched) == 0 {
			continue
		}
		if re := firstMatch(blocked, e.source, e.repo); re != "" {
			plan.Kept = append(plan.Kept, KeptManifest{Repository: e.repo, Digest: e.digest, Source: e.source, Why: []string{"delete.blockedImages " + re + " protects it"}})
			continue
		}
		var still []runWant
		for _, w := range inv.current[k] {
			if !m.match(w.w) {
				still = append(still, w)
			}
		}
		if len(still) > 0 {
			plan.Kept = append(plan.Kept, KeptManifest{Repository: e.repo, Digest: e.digest, Source: e.source, Why: []string{
				"the delete configuration names it as " + wantList(matched),
				fmt.Sprintf("still wanted by run %d as %s", still[0].seq, wantList(still)),
			}})
			continue
		}
		out = append(out, &candidate{e: e, why: []string{"the delete configuration names it as " + wantList(matched)}})
	}
	return out, nil
}

// firstMatch returns the first pattern matching one of refs ("" if none).
func firstMatch(res []*regexp.Regexp, refs ...string) string {
	for _, re := range res {
		for _, r := range refs {
			if re.MatchString(r) {
				return re.String()
			}
		}
	}
	return ""
}

// deleteMatcher tells which wants a DeleteImageSetConfiguration names.
type deleteMatcher struct {
	cfg *imageset.DeleteImageSetConfiguration
}

func (m deleteMatcher) match(w Want) bool {
	switch w.Kind {
	case WantAdditional:
		for _, im := range m.cfg.Delete.AdditionalImages {
			if im.Ref() == w.Image {
				return true
			}
		}
		return false
	case WantCatalog:
		for _, op := range m.cfg.Delete.Operators {
			if op.Catalog == w.Catalog && len(op.Packages) == 0 {
				return true
			}
		}
		return false
	}
	for _, op := range m.cfg.Delete.Operators {
		if op.Catalog != w.Catalog {
			continue
		}
		if len(op.Packages) == 0 {
			return true
		}
		if w.Bundle == "" {
			continue // known by catalog only: cannot tell its package
		}
		for _, p := range op.Packages {
			if p.Name == w.Package && prune.SelectsBundle(p, w.Bundle, w.Version, w.Channels) {
				return true
			}
		}
	}
	return false
}
