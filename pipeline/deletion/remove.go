package deletion

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/workspace"
)

// KeptEntry is a planned manifest the execution did not delete on purpose.
type KeptEntry struct {
	Repository string        `json:"repository"`
	Digest     digest.Digest `json:"digest"`
	Why        string        `json:"why"`
}

// FailedEntry is a planned manifest whose deletion failed.
type FailedEntry struct {
	Repository string        `json:"repository"`
	Digest     digest.Digest `json:"digest"`
	Error      string        `json:"error"`
}

// deleteEntries deletes the plan's entries with what the registry can do, each
// on its own (a failure is recorded and the rest goes on): the planned tags
// first (DELETE by tag), then each manifest by digest, indexes before their
// platform images. A registry that cannot delete a tag alone (Distribution
// 2.x) has its tags removed with their manifest instead. A manifest is deleted
// by digest only while no tag outside its plan entry points at it (a registry
// removes every tag of a manifest it deletes); otherwise it is kept, and the
// result says why.
func deleteEntries(ctx context.Context, reg *registry.Client, plan *workspace.DeletePlan, gone map[int]bool, res *Result) {
	held := map[int]bool{} // failed or kept: their platform images stay too
	fail := func(i int, err error) {
		m := plan.Manifests[i]
		held[i] = true
		res.Failed = append(res.Failed, FailedEntry{Repository: m.Repository, Digest: m.Digest, Error: err.Error()})
	}
	keep := func(i int, why string) {
		m := plan.Manifests[i]
		held[i] = true
		res.Kept = append(res.Kept, KeptEntry{Repository: m.Repository, Digest: m.Digest, Why: why})
	}
	var noDeletes error // the registry allows no deletes at all
	for i, m := range plan.Manifests {
		if gone[i] || res.TagsWithManifests || noDeletes != nil {
			continue
		}
		for _, t := range m.Tags {
			found, err := reg.DeleteTag(ctx, m.Repository, t)
			if errors.Is(err, registry.ErrDeleteUnsupported) {
				noDeletes = err
				break
			}
			if errors.Is(err, registry.ErrTagDeleteUnsupported) {
				// The registry drops the tags with the manifest: from here on,
				// every entry's tags go with its manifest.
				res.TagsWithManifests = true
				break
			}
			if err != nil {
				fail(i, err)
				break
			}
			if found {
				res.TagsDeleted++
			}
		}
	}
	order := make([]int, 0, len(plan.Manifests))
	for i, m := range plan.Manifests {
		if m.ChildOf == "" {
			order = append(order, i)
		}
	}
	for i, m := range plan.Manifests {
		if m.ChildOf != "" {
			order = append(order, i)
		}
	}
	states := map[string]repoState{}
	for _, i := range order {
		if noDeletes != nil {
			fail(i, noDeletes)
			continue
		}
		if ctx.Err() != nil {
			fail(i, ctx.Err())
			continue
		}
		m := plan.Manifests[i]
		hd := workspace.HistoryDelete{Repository: m.Repository, Digest: m.Digest, Tags: m.Tags}
		if gone[i] {
			res.AlreadyGone = append(res.AlreadyGone, hd)
			continue
		}
		if held[i] {
			continue
		}
		if held[parentIndex(plan, i)] {
			keep(i, "a platform image of "+m.ChildOf.String()+", which was not deleted")
			continue
		}
		// The tags pointing at it now (read once per repository, after the
		// planned tags were deleted).
		st, ok := states[m.Repository]
		if !ok {
			var err error
			if st, err = readRepoState(ctx, reg, m.Repository); err != nil {
				fail(i, err)
				continue
			}
			states[m.Repository] = st
		}
		var foreign []string
		for _, t := range st.tagsOf(m.Digest) {
			if !slices.Contains(m.Tags, t) {
				foreign = append(foreign, t)
			}
		}
		if len(foreign) > 0 {
			keep(i, fmt.Sprintf("tag(s) %s, not in the plan, point at it; deleting it by digest would remove them too: delete or move them by hand, then generate a new plan", strings.Join(foreign, ", ")))
			continue
		}
		found, err := reg.DeleteManifest(ctx, m.Repository, m.Digest)
		if err != nil {
			fail(i, err)
			continue
		}
		for _, t := range m.Tags {
			delete(st, t)
		}
		if !found {
			res.AlreadyGone = append(res.AlreadyGone, hd)
			continue
		}
		res.Deleted = append(res.Deleted, hd)
		if res.TagsWithManifests {
			res.TagsDeleted += len(m.Tags)
		}
	}
}

// parentIndex is the index in plan.Manifests of entry i's index (-1 when it
// has none in the plan).
func parentIndex(plan *workspace.DeletePlan, i int) int {
	m := plan.Manifests[i]
	if m.ChildOf == "" {
		return -1
	}
	for j, p := range plan.Manifests {
		if p.Repository == m.Repository && p.Digest == m.ChildOf {
			return j
		}
	}
	return -1
}
