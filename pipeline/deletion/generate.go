package deletion

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/workspace"
)

func generate(ctx context.Context, o Options, dest string, reg *registry.Client) (*Result, error) {
	wd, err := workspace.OpenLocation(o.Workspace)
	if err != nil {
		return nil, err
	}
	if _, err := workspace.DeletePlanPathID(wd, o.DeleteID); err != nil {
		return nil, err
	}
	h, err := workspace.ReadHistory(wd)
	if err != nil {
		return nil, err
	}
	inv := h.Inventory(dest)
	if inv.Runs == 0 {
		var dests []string
		seen := map[string]bool{}
		for _, r := range h.Runs {
			if !seen[r.Destination] {
				seen[r.Destination] = true
				dests = append(dests, location.Docker(r.Destination).String())
			}
		}
		hint := "no run is recorded there yet"
		if len(dests) > 0 {
			hint = "it records runs to " + strings.Join(dests, ", ")
		}
		return nil, fmt.Errorf("the workspace %s records no mirror run to %s (%s): give the destination and --workspace of the mirror runs", wd.Workspace(), dest, hint)
	}
	plan := &workspace.DeletePlan{
		APIVersion: workspace.DeletePlanAPIVersion, Kind: workspace.DeletePlanKind, Destination: dest,
		Generated: time.Now().UTC().Truncate(time.Second), HistoryRun: inv.LastSeq, AfterDelete: workspace.AfterDeleteNote,
	}
	var cands []*candidate
	switch {
	case o.Stale:
		if err := inv.CountSelections(o.Selections); err != nil {
			return nil, err
		}
		plan.Selections, plan.NotCounted = inv.SelectionLines()
		if plan.Selections == nil {
			plan.Selections = []string{}
		}
		plan.Reason = "stale: mirrored by earlier runs, wanted by no current selection (" + currentDesc(inv) + ")"
		cands = staleCandidates(inv, plan)
	default:
		cfg, err := imageset.LoadDeleteFile(o.ConfigPath)
		if err != nil {
			return nil, err
		}
		plan.Reason = "DeleteImageSetConfiguration " + o.ConfigPath
		cands, err = configCandidates(inv, cfg, o, plan)
		if err != nil {
			return nil, err
		}
	}
	if err := resolveCandidates(ctx, reg, inv, cands, plan); err != nil {
		return nil, err
	}
	path, err := workspace.WriteDeletePlanID(wd, plan, o.DeleteID)
	if err != nil {
		return nil, err
	}
	return &Result{PlanFile: path, Plan: plan}, nil
}

// repoState is what a repository's tags point at.
type repoState map[string]digest.Digest // tag → digest

func readRepoState(ctx context.Context, reg *registry.Client, repo string) (repoState, error) {
	tags, err := reg.Tags(ctx, repo)
	if err != nil {
		return nil, err
	}
	st := repoState{}
	for _, t := range tags {
		d, err := reg.Resolve(ctx, repo+":"+t)
		if err != nil {
			if endpoint.StatusOf(err) == http.StatusNotFound {
				continue // deleted meanwhile
			}
			return nil, err
		}
		st[t] = d.Digest
	}
	return st, nil
}

func (st repoState) tagsOf(d digest.Digest) []string {
	var out []string
	for t, td := range st {
		if td == d {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// resolveCandidates checks each candidate against the registry (still there,
// its tags all airlock's), adds the platform manifests of indexes nothing else
// uses, and fills the plan.
func resolveCandidates(ctx context.Context, reg *registry.Client, inv *workspace.Inventory, cands []*candidate, plan *workspace.DeletePlan) error {
	byRepo := map[string][]*candidate{}
	var repos []string
	for _, c := range cands {
		if byRepo[c.e.Repo] == nil {
			repos = append(repos, c.e.Repo)
		}
		byRepo[c.e.Repo] = append(byRepo[c.e.Repo], c)
	}
	sort.Strings(repos)
	for _, repo := range repos {
		st, err := readRepoState(ctx, reg, repo)
		if err != nil {
			return err
		}
		planned := map[digest.Digest]bool{}
		var entries []workspace.PlannedManifest
		for _, c := range byRepo[repo] {
			ok, err := reg.ManifestExists(ctx, repo, c.e.Digest.String(), c.e.Digest)
			if err != nil {
				return err
			}
			if !ok {
				continue // no longer in the registry: nothing to delete
			}
			tags := st.tagsOf(c.e.Digest)
			if foreign := notOurs(tags, inv.Tags[repo]); len(foreign) > 0 {
				plan.Kept = append(plan.Kept, workspace.KeptManifest{Repository: repo, Digest: c.e.Digest, Source: c.e.Source, Why: append(c.why,
					fmt.Sprintf("tag(s) %s point at it and airlock never pushed them: delete them by hand first if it must go", strings.Join(foreign, ", ")))})
				continue
			}
			planned[c.e.Digest] = true
			entries = append(entries, workspace.PlannedManifest{Repository: repo, Digest: c.e.Digest, MediaType: c.e.MediaType, Tags: tags, Source: c.e.Source, Kind: c.e.Kind, Why: c.why})
		}
		if len(entries) == 0 {
			continue
		}
		// Platform manifests of the deleted indexes go too, unless a manifest that
		// stays (any other index of the repository, or an image recorded itself)
		// uses them.
		keep := map[digest.Digest]bool{}
		for _, k := range inv.PresentIn(repo) {
			e := inv.Present[k]
			if planned[e.Digest] {
				continue
			}
			keep[e.Digest] = true
			if e.MediaType != "" && !oci.IsIndex(e.MediaType) {
				continue
			}
			kids, err := reg.ManifestChildren(ctx, repo, e.Digest)
			if err != nil {
				if endpoint.StatusOf(err) == http.StatusNotFound {
					continue
				}
				return fmt.Errorf("read %s: %w", k, err)
			}
			for _, d := range kids {
				keep[d] = true
			}
		}
		var children []workspace.PlannedManifest
		for _, pm := range entries {
			if pm.MediaType != "" && !oci.IsIndex(pm.MediaType) {
				continue
			}
			kids, err := reg.ManifestChildren(ctx, repo, pm.Digest)
			if err != nil {
				return err
			}
			for _, d := range kids {
				if keep[d] || planned[d] {
					continue
				}
				// A sparse index (a platform subset) names children the
				// registry never received: nothing to delete.
				if held, err := reg.ManifestExists(ctx, repo, d.String(), d); err != nil {
					return err
				} else if !held {
					continue
				}
				tags := st.tagsOf(d)
				if len(notOurs(tags, inv.Tags[repo])) > 0 {
					continue
				}
				planned[d] = true
				children = append(children, workspace.PlannedManifest{Repository: repo, Digest: d, Tags: tags, Source: pm.Source, Kind: pm.Kind, ChildOf: pm.Digest,
					Why: []string{"a platform image of " + pm.Digest.String() + ", which is deleted; no manifest that stays uses it"}})
			}
		}
		plan.Manifests = append(plan.Manifests, entries...)
		plan.Manifests = append(plan.Manifests, children...)
	}
	return nil
}

func notOurs(tags []string, ours map[string]bool) []string {
	var out []string
	for _, t := range tags {
		if !ours[t] {
			out = append(out, t)
		}
	}
	return out
}
