package deletion

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/workspace"
)

func execute(ctx context.Context, o Options, dest string, reg *registry.Client) (*Result, error) {
	wd, err := planWorkDir(o)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(o.PlanFile)
	if err != nil {
		return nil, fmt.Errorf("open the delete plan: %w", err)
	}
	plan, err := workspace.ReadDeletePlan(f, o.PlanFile)
	f.Close()
	if err != nil {
		return nil, err
	}
	if err := workspace.CheckDeletePlan(plan, o.PlanFile, wd, dest); err != nil {
		return nil, err
	}
	res := &Result{PlanFile: o.PlanFile, Plan: plan}
	// Nothing is deleted unless the registry and the history are as the plan
	// saw them.
	h, err := workspace.ReadHistory(wd)
	if err != nil {
		return nil, err
	}
	planned := map[string]bool{}
	for _, m := range plan.Manifests {
		planned[workspace.ImageKey(m.Repository, m.Digest)] = true
	}
	var changes []string
	for _, run := range h.Runs {
		if run.Seq <= plan.HistoryRun || run.Destination != dest {
			continue
		}
		for _, im := range run.Images {
			if k := workspace.ImageKey(im.Repository, im.Digest); planned[k] {
				changes = append(changes, fmt.Sprintf("run %d (after the plan) mirrored %s again", run.Seq, k))
			}
		}
		if run.Kind == workspace.RunDelete && run.Plan == plan.PlanID {
			changes = append(changes, fmt.Sprintf("run %d already executed this plan", run.Seq))
		}
	}
	byRepo := map[string][]int{}
	var repos []string
	for i, m := range plan.Manifests {
		if byRepo[m.Repository] == nil {
			repos = append(repos, m.Repository)
		}
		byRepo[m.Repository] = append(byRepo[m.Repository], i)
	}
	sort.Strings(repos)
	gone := map[int]bool{}
	for _, repo := range repos {
		st, err := readRepoState(ctx, reg, repo)
		if err != nil {
			return nil, err
		}
		for _, i := range byRepo[repo] {
			m := plan.Manifests[i]
			for _, t := range m.Tags {
				if d, ok := st[t]; ok && d != m.Digest {
					changes = append(changes, fmt.Sprintf("tag %s:%s now points at %s, not %s", repo, t, d, m.Digest))
				}
			}
			for _, t := range st.tagsOf(m.Digest) {
				if !slices.Contains(m.Tags, t) {
					changes = append(changes, fmt.Sprintf("tag %s:%s was put on %s after the plan was made", repo, t, m.Digest))
				}
			}
			ok, err := reg.ManifestExists(ctx, repo, m.Digest.String(), m.Digest)
			if err != nil {
				return nil, err
			}
			if !ok {
				gone[i] = true
			}
		}
	}
	if len(changes) > 0 {
		sort.Strings(changes)
		return nil, fmt.Errorf("%w: the registry changed since plan %s was made (%s, history run %d):\n  - %s\nnothing was deleted; generate a new plan with airlock delete --generate and review it",
			workspace.ErrPlanRefused, plan.PlanID, plan.Generated.Format(time.RFC3339), plan.HistoryRun, strings.Join(changes, "\n  - "))
	}

	// Tags first, then manifests by digest, indexes before their platform images.
	var runErr error
	for i, m := range plan.Manifests {
		if gone[i] {
			continue
		}
		for _, t := range m.Tags {
			found, err := reg.DeleteTag(ctx, m.Repository, t)
			if errors.Is(err, registry.ErrDeleteUnsupported) {
				break // the registry drops the tags with the manifest
			}
			if err != nil {
				runErr = err
				break
			}
			if found {
				res.TagsDeleted++
			}
		}
		if runErr != nil {
			break
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
	for _, i := range order {
		if runErr != nil {
			break
		}
		m := plan.Manifests[i]
		hd := workspace.HistoryDelete{Repository: m.Repository, Digest: m.Digest, Tags: m.Tags}
		if gone[i] {
			res.AlreadyGone = append(res.AlreadyGone, hd)
			continue
		}
		found, err := reg.DeleteManifest(ctx, m.Repository, m.Digest)
		if err != nil {
			runErr = err
			break
		}
		if found {
			res.Deleted = append(res.Deleted, hd)
		} else {
			res.AlreadyGone = append(res.AlreadyGone, hd)
		}
	}
	// What was deleted is recorded even when the run stopped half-way.
	hr := workspace.HistoryRun{Kind: workspace.RunDelete, Time: time.Now().UTC(), Destination: dest, Plan: plan.PlanID, Complete: runErr == nil,
		Deleted: append(append([]workspace.HistoryDelete(nil), res.Deleted...), res.AlreadyGone...)}
	if _, err := workspace.AppendHistory(wd, hr); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return res, fmt.Errorf("delete stopped after %d manifest(s): %w; generate a new plan to finish", len(res.Deleted), runErr)
	}
	files, err := regenerateClusterResources(wd, dest)
	if err != nil {
		return res, err
	}
	res.ClusterResources = files
	return res, nil
}

// regenerateClusterResources rewrites working-dir/cluster-resources from the
// latest mirror run to dest, without what was deleted since.
func regenerateClusterResources(wd workspace.Dir, dest string) ([]string, error) {
	h, err := workspace.ReadHistory(wd)
	if err != nil {
		return nil, err
	}
	inv := h.Inventory(dest)
	var last *workspace.HistoryRun
	for i := range h.Runs {
		if h.Runs[i].Destination == dest && h.Runs[i].Kind == workspace.RunMirror {
			last = &h.Runs[i]
		}
	}
	if last == nil {
		return nil, nil
	}
	var images []manifests.Image
	for _, im := range last.Images {
		if im.Kind == mirror.KindCatalog || inv.Present[workspace.ImageKey(im.Repository, im.Digest)] == nil {
			continue
		}
		images = append(images, manifests.Image{Source: im.Source, Destination: im.Destination(), Digest: im.Digest.String(), Kind: manifests.Kind(im.Kind)})
	}
	var catalogs []manifests.Catalog
	for _, c := range last.Catalogs {
		if c.DestRepo == "" || inv.Present[workspace.ImageKey(c.DestRepo, c.Digest)] == nil {
			continue
		}
		mc := manifests.Catalog{Source: c.Catalog, Destination: c.DestRepo + ":" + c.Tag, Digest: c.Digest.String()}
		if p := last.Templates[c.Catalog]; p != "" {
			if b, err := os.ReadFile(p); err == nil {
				mc.Template, mc.TemplatePath = b, p
			}
		}
		catalogs = append(catalogs, mc)
	}
	set, err := manifests.Build(images, catalogs, manifests.Options{RepositoryScope: last.MaxNestedPaths > 0})
	if err != nil {
		return nil, err
	}
	dir := wd.ClusterResourcesDir()
	if err := set.Write(dir); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range set.Files() {
		out = append(out, filepath.Join(dir, f.Name))
	}
	return out, nil
}
