package deletion

import (
	"fmt"
	"regexp"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/workspace"
)

type candidate struct {
	e   *workspace.InventoryEntry
	why []string
}

func staleCandidates(inv *workspace.Inventory, plan *workspace.DeletePlan) []*candidate {
	var out []*candidate
	for _, k := range inv.Keys() {
		e := inv.Present[k]
		cur := inv.Current[k]
		if len(cur) == 0 {
			out = append(out, &candidate{e: e, why: []string{fmt.Sprintf("last selected by run %d as %s; no current selection wants it", e.LastRun, wantList(lastWants(inv.Wants[k], e.LastRun)))}})
			continue
		}
		// Still wanted: worth saying when it lost a reason on the way.
		curKeys := map[string]bool{}
		for _, w := range cur {
			curKeys[w.Want.Key()] = true
		}
		var lost []workspace.RunWant
		for _, w := range inv.Wants[k] {
			if !curKeys[w.Want.Key()] {
				lost = append(lost, w)
			}
		}
		if len(lost) > 0 {
			plan.Kept = append(plan.Kept, workspace.KeptManifest{Repository: e.Repo, Digest: e.Digest, Source: e.Source, Why: []string{
				"no longer wanted as " + wantList(lost),
				fmt.Sprintf("still wanted by run %d as %s", cur[0].Seq, wantList(cur)),
			}})
		}
	}
	return out
}

func lastWants(ws []workspace.RunWant, seq int) []workspace.RunWant {
	var out []workspace.RunWant
	for _, w := range ws {
		if w.Seq == seq {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return ws
	}
	return out
}

func configCandidates(inv *workspace.Inventory, cfg *imageset.DeleteImageSetConfiguration, o Options, plan *workspace.DeletePlan) ([]*candidate, error) {
	blocked, err := cfg.BlockedPatterns()
	if err != nil {
		return nil, err
	}
	names := func(w workspace.Want) bool { return o.Names != nil && o.Names(cfg, w) }
	var out []*candidate
	for _, k := range inv.Keys() {
		e := inv.Present[k]
		var matched []workspace.RunWant
		for _, w := range inv.Wants[k] {
			if names(w.Want) {
				matched = append(matched, w)
			}
		}
		if len(matched) == 0 {
			continue
		}
		if re := firstMatch(blocked, e.Source, e.Repo); re != "" {
			plan.Kept = append(plan.Kept, workspace.KeptManifest{Repository: e.Repo, Digest: e.Digest, Source: e.Source, Why: []string{"delete.blockedImages " + re + " protects it"}})
			continue
		}
		var still []workspace.RunWant
		for _, w := range inv.Current[k] {
			if !names(w.Want) {
				still = append(still, w)
			}
		}
		if len(still) > 0 {
			plan.Kept = append(plan.Kept, workspace.KeptManifest{Repository: e.Repo, Digest: e.Digest, Source: e.Source, Why: []string{
				"the delete configuration names it as " + wantList(matched),
				fmt.Sprintf("still wanted by run %d as %s", still[0].Seq, wantList(still)),
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
