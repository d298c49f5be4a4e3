package deletion

import (
	"context"
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

	deleteEntries(ctx, reg, plan, gone, res)
	// What was deleted is recorded even when some entries failed.
	hr := workspace.HistoryRun{Kind: workspace.RunDelete, Time: time.Now().UTC(), Destination: dest, Plan: plan.PlanID, Complete: len(res.Failed) == 0,
		Deleted: append(append([]workspace.HistoryDelete(nil), res.Deleted...), res.AlreadyGone...)}
	if _, err := workspace.AppendHistory(wd, hr); err != nil {
		return res, err
	}
	if len(res.Failed) > 0 {
		var lines []string
		for _, f := range res.Failed {
			lines = append(lines, workspace.ImageKey(f.Repository, f.Digest)+": "+f.Error)
		}
		return res, fmt.Errorf("delete finished with %d of %d manifest(s) not deleted:\n  - %s\ngenerate a new plan to finish", len(res.Failed), len(plan.Manifests), strings.Join(lines, "\n  - "))
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
