package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// DeleteOptions are the delete command's inputs.
type DeleteOptions struct {
	// Generate writes a plan (--generate) instead of executing one.
	Generate bool
	// ConfigPath is -c: a DeleteImageSetConfiguration (with Generate).
	ConfigPath string
	// Stale plans what earlier runs mirrored that no current selection wants.
	Stale bool
	// Workspace is --workspace file://DIR: the workspace of the mirror runs.
	Workspace string
	// Destination is docker://REGISTRY[:PORT][/NAMESPACE].
	Destination string
	// PlanFile is --delete-yaml-file: the plan to execute.
	PlanFile string
	// AuthFile, DestTLSVerify and RetryTimes as for mirror.
	AuthFile      string
	DestTLSVerify bool
	RetryTimes    int
	// Retry, when set, replaces the policy RetryTimes makes.
	Retry  *mirror.RetryPolicy
	Logger *slog.Logger
}

// DeleteResult is what a delete command did.
type DeleteResult struct {
	// PlanFile is the plan written (Generate) or executed.
	PlanFile string      `json:"planFile"`
	Plan     *DeletePlan `json:"plan,omitempty"`
	// Deleted are the manifests removed; AlreadyGone those the registry no
	// longer had.
	Deleted     []HistoryDelete `json:"deleted,omitempty"`
	AlreadyGone []HistoryDelete `json:"alreadyGone,omitempty"`
	TagsDeleted int             `json:"tagsDeleted,omitempty"`
	// ClusterResources are the files rewritten without what was deleted.
	ClusterResources []string `json:"clusterResources,omitempty"`
}

// Delete plans (Generate) or executes a deletion from a mirror registry.
func Delete(ctx context.Context, o DeleteOptions) (*DeleteResult, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	dest, ok := strings.CutPrefix(o.Destination, "docker://")
	dest = strings.TrimSuffix(dest, "/")
	if !ok || dest == "" || strings.HasPrefix(dest, "/") {
		return nil, fmt.Errorf("destination %q must be docker://REGISTRY[:PORT]/NAMESPACE, the one the mirror runs wrote to", o.Destination)
	}
	retry := o.Retry
	if retry == nil {
		retry = mirror.Retries(o.RetryTimes)
	}
	reg := mirror.NewRegistry(mirror.RegistryOptions{
		AuthFile: o.AuthFile, SkipTLSVerify: !o.DestTLSVerify, TLSFlag: "--dest-tls-verify=false",
		Retry: retry, Logger: o.Logger,
	})
	if o.Generate {
		if o.PlanFile != "" {
			return nil, errors.New("--generate writes a plan and --delete-yaml-file executes one: give one of them")
		}
		return generateDelete(ctx, o, dest, reg)
	}
	if o.PlanFile == "" {
		return nil, errors.New("nothing to do: plan with --generate (-c delete-isc.yaml or --stale), then execute the reviewed plan with --delete-yaml-file")
	}
	if o.ConfigPath != "" || o.Stale {
		return nil, errors.New("-c and --stale make a plan: use them with --generate; --delete-yaml-file executes a plan as it is")
	}
	return executeDelete(ctx, o, dest, reg)
}

// inventory is what the history says of one destination.
type inventory struct {
	dest string
	// present are the manifests airlock put there and did not delete since.
	present map[string]*invEntry
	// wants are every reason any run selected each manifest.
	wants map[string][]runWant
	// current are the wants of the current selections: the latest run of each
	// configuration file at this destination.
	current     map[string][]runWant
	currentRuns []HistoryRun
	// tags are the tags airlock put in each repository.
	tags    map[string]map[string]bool
	lastSeq int
	runs    int
}

type invEntry struct {
	repo      string
	digest    digest.Digest
	mediaType string
	source    string
	kind      mirror.ImageKind
	lastRun   int
}

type runWant struct {
	seq int
	w   Want
}

func buildInventory(h *History, dest string) *inventory {
	inv := &inventory{dest: dest, present: map[string]*invEntry{}, wants: map[string][]runWant{}, current: map[string][]runWant{}, tags: map[string]map[string]bool{}}
	latest := map[string]int{} // config path → index of its latest run
	for i, run := range h.Runs {
		if run.Destination != dest {
			continue
		}
		inv.lastSeq = run.Seq
		switch run.Kind {
		case RunDelete:
			for _, d := range run.Deleted {
				delete(inv.present, imageKey(d.Repository, d.Digest))
			}
		case RunMirror:
			inv.runs++
			latest[run.ConfigPath] = i
			for _, im := range run.Images {
				k := imageKey(im.Repository, im.Digest)
				for _, w := range im.WantedBy {
					inv.wants[k] = append(inv.wants[k], runWant{run.Seq, w})
				}
				if inv.tags[im.Repository] == nil {
					inv.tags[im.Repository] = map[string]bool{}
				}
				for _, t := range im.Tags {
					inv.tags[im.Repository][t] = true
				}
				if im.Mirrored() {
					inv.present[k] = &invEntry{repo: im.Repository, digest: im.Digest, mediaType: im.MediaType, source: im.Source, kind: im.Kind, lastRun: run.Seq}
				} else if e := inv.present[k]; e != nil {
					e.lastRun = run.Seq
				}
			}
		}
	}
	var idx []int
	for _, i := range latest {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		run := h.Runs[i]
		inv.currentRuns = append(inv.currentRuns, run)
		for _, im := range run.Images {
			k := imageKey(im.Repository, im.Digest)
			for _, w := range im.WantedBy {
				inv.current[k] = append(inv.current[k], runWant{run.Seq, w})
			}
		}
	}
	return inv
}

func (inv *inventory) keys() []string {
	out := make([]string, 0, len(inv.present))
	for k := range inv.present {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (inv *inventory) currentDesc() string {
	var parts []string
	for _, r := range inv.currentRuns {
		parts = append(parts, fmt.Sprintf("run %d (%s)", r.Seq, r.ConfigPath))
	}
	return strings.Join(parts, ", ")
}

func wantList(ws []runWant) string {
	seen := map[string]bool{}
	var out []string
	for _, w := range ws {
		s := w.w.String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func generateDelete(ctx context.Context, o DeleteOptions, dest string, reg *mirror.Registry) (*DeleteResult, error) {
	if o.Workspace == "" {
		return nil, errors.New("--generate needs --workspace file://DIR: the workspace of the mirror runs, whose history says what is in the registry and why")
	}
	wd, err := workingDir(o.Workspace)
	if err != nil {
		return nil, err
	}
	h, err := readHistory(wd)
	if err != nil {
		return nil, err
	}
	inv := buildInventory(h, dest)
	if inv.runs == 0 {
		var dests []string
		seen := map[string]bool{}
		for _, r := range h.Runs {
			if !seen[r.Destination] {
				seen[r.Destination] = true
				dests = append(dests, "docker://"+r.Destination)
			}
		}
		hint := "no run is recorded there yet"
		if len(dests) > 0 {
			hint = "it records runs to " + strings.Join(dests, ", ")
		}
		return nil, fmt.Errorf("the workspace %s records no mirror run to %s (%s): give the destination and --workspace of the mirror runs", filepath.Dir(wd), dest, hint)
	}
	plan := &DeletePlan{
		APIVersion: DeletePlanAPIVersion, Kind: DeletePlanKind, Destination: dest,
		Generated: time.Now().UTC().Truncate(time.Second), HistoryRun: inv.lastSeq, AfterDelete: afterDeleteNote,
	}
	var cands []*candidate
	switch {
	case o.Stale && o.ConfigPath != "":
		return nil, errors.New("--stale plans what no current selection wants, -c what a DeleteImageSetConfiguration names: give one of them")
	case o.Stale:
		plan.Reason = "stale: mirrored by earlier runs, wanted by no current selection (" + inv.currentDesc() + ")"
		cands = staleCandidates(inv, plan)
	case o.ConfigPath != "":
		cfg, err := imageset.LoadDeleteFile(o.ConfigPath)
		if err != nil {
			return nil, err
		}
		if cfg.Delete.Platform != nil || cfg.Delete.Helm != nil {
			return nil, fmt.Errorf("%s: delete.platform and delete.helm are not supported: airlock mirrors neither; list operators and additionalImages", o.ConfigPath)
		}
		plan.Reason = "DeleteImageSetConfiguration " + o.ConfigPath
		cands, err = configCandidates(inv, cfg, plan)
		if err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("--generate needs -c delete-isc.yaml (a DeleteImageSetConfiguration) or --stale")
	}
	if err := resolveCandidates(ctx, reg, inv, cands, plan); err != nil {
		return nil, err
	}
	path, err := writeDeletePlan(wd, plan)
	if err != nil {
		return nil, err
	}
	return &DeleteResult{PlanFile: path, Plan: plan}, nil
}

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
			if p.Name == w.Package && bundleSelected(p, w) {
				return true
			}
		}
	}
	return false
}

// bundleSelected reports whether the package entry p names the bundle of w.
func bundleSelected(p imageset.IncludePackage, w Want) bool {
	if len(p.SelectedBundles) > 0 {
		for _, b := range p.SelectedBundles {
			if b.Name == w.Bundle {
				return true
			}
		}
		return false
	}
	if len(p.Channels) > 0 {
		for _, ch := range p.Channels {
			for _, c := range w.Channels {
				if c == ch.Name && inRange(w.Version, ch.IncludeBundle) && inRange(w.Version, p.IncludeBundle) {
					return true
				}
			}
		}
		return false
	}
	return inRange(w.Version, p.IncludeBundle)
}

func inRange(version string, ib imageset.IncludeBundle) bool {
	if ib.MinVersion == "" && ib.MaxVersion == "" {
		return true
	}
	v := parseVersion(version)
	if v == nil {
		return false
	}
	if lo := parseVersion(ib.MinVersion); lo != nil && v.LT(*lo) {
		return false
	}
	if hi := parseVersion(ib.MaxVersion); hi != nil && v.GT(*hi) {
		return false
	}
	return true
}

// repoState is what a repository's tags point at.
type repoState map[string]digest.Digest // tag → digest

func readRepoState(ctx context.Context, reg *mirror.Registry, repo string) (repoState, error) {
	tags, err := reg.Tags(ctx, repo)
	if err != nil {
		return nil, err
	}
	st := repoState{}
	for _, t := range tags {
		d, err := reg.Resolve(ctx, repo+":"+t)
		if err != nil {
			var se *mirror.HTTPStatusError
			if errors.As(err, &se) && se.StatusCode == 404 {
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
func resolveCandidates(ctx context.Context, reg *mirror.Registry, inv *inventory, cands []*candidate, plan *DeletePlan) error {
	byRepo := map[string][]*candidate{}
	var repos []string
	for _, c := range cands {
		if byRepo[c.e.repo] == nil {
			repos = append(repos, c.e.repo)
		}
		byRepo[c.e.repo] = append(byRepo[c.e.repo], c)
	}
	sort.Strings(repos)
	for _, repo := range repos {
		st, err := readRepoState(ctx, reg, repo)
		if err != nil {
			return err
		}
		planned := map[digest.Digest]bool{}
		var entries []PlannedManifest
		for _, c := range byRepo[repo] {
			ok, err := reg.ManifestExists(ctx, repo, c.e.digest.String(), c.e.digest)
			if err != nil {
				return err
			}
			if !ok {
				continue // no longer in the registry: nothing to delete
			}
			tags := st.tagsOf(c.e.digest)
			if foreign := notOurs(tags, inv.tags[repo]); len(foreign) > 0 {
				plan.Kept = append(plan.Kept, KeptManifest{Repository: repo, Digest: c.e.digest, Source: c.e.source, Why: append(c.why,
					fmt.Sprintf("tag(s) %s point at it and airlock never pushed them: delete them by hand first if it must go", strings.Join(foreign, ", ")))})
				continue
			}
			planned[c.e.digest] = true
			entries = append(entries, PlannedManifest{Repository: repo, Digest: c.e.digest, MediaType: c.e.mediaType, Tags: tags, Source: c.e.source, Kind: c.e.kind, Why: c.why})
		}
		if len(entries) == 0 {
			continue
		}
		// Platform manifests of the deleted indexes go too, unless a manifest that
		// stays (any other index of the repository, or an image recorded itself)
		// uses them.
		keep := map[digest.Digest]bool{}
		for k, e := range inv.present {
			if e.repo != repo || planned[e.digest] {
				continue
			}
			keep[e.digest] = true
			if e.mediaType != "" && !oci.IsIndex(e.mediaType) {
				continue
			}
			kids, err := reg.ManifestChildren(ctx, repo, e.digest)
			if err != nil {
				var se *mirror.HTTPStatusError
				if errors.As(err, &se) && se.StatusCode == 404 {
					continue
				}
				return fmt.Errorf("read %s: %w", k, err)
			}
			for _, d := range kids {
				keep[d] = true
			}
		}
		var children []PlannedManifest
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
				tags := st.tagsOf(d)
				if len(notOurs(tags, inv.tags[repo])) > 0 {
					continue
				}
				planned[d] = true
				children = append(children, PlannedManifest{Repository: repo, Digest: d, Tags: tags, Source: pm.Source, Kind: pm.Kind, ChildOf: pm.Digest,
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

// planWorkDir finds the workspace of a plan file: --workspace, else the
// working-dir the file is in (DIR/working-dir/delete/delete-images.yaml).
func planWorkDir(o DeleteOptions) (string, error) {
	if o.Workspace != "" {
		return workingDir(o.Workspace)
	}
	abs, err := filepath.Abs(o.PlanFile)
	if err != nil {
		return "", err
	}
	d := filepath.Dir(abs)
	if filepath.Base(d) == deleteDirName && filepath.Base(filepath.Dir(d)) == "working-dir" {
		return filepath.Dir(d), nil
	}
	return "", fmt.Errorf("%s is not inside a workspace (DIR/working-dir/delete/): give --workspace file://DIR, the workspace the plan was generated in", o.PlanFile)
}

func executeDelete(ctx context.Context, o DeleteOptions, dest string, reg *mirror.Registry) (*DeleteResult, error) {
	wd, err := planWorkDir(o)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(o.PlanFile)
	if err != nil {
		return nil, fmt.Errorf("open the delete plan: %w", err)
	}
	plan, err := readPlan(f, o.PlanFile)
	f.Close()
	if err != nil {
		return nil, err
	}
	if err := checkPlan(plan, o.PlanFile, wd, dest); err != nil {
		return nil, err
	}
	res := &DeleteResult{PlanFile: o.PlanFile, Plan: plan}
	// Nothing is deleted unless the registry and the history are as the plan
	// saw them.
	h, err := readHistory(wd)
	if err != nil {
		return nil, err
	}
	planned := map[string]bool{}
	for _, m := range plan.Manifests {
		planned[imageKey(m.Repository, m.Digest)] = true
	}
	var changes []string
	for _, run := range h.Runs {
		if run.Seq <= plan.HistoryRun || run.Destination != dest {
			continue
		}
		for _, im := range run.Images {
			if k := imageKey(im.Repository, im.Digest); planned[k] {
				changes = append(changes, fmt.Sprintf("run %d (after the plan) mirrored %s again", run.Seq, k))
			}
		}
		if run.Kind == RunDelete && run.Plan == plan.PlanID {
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
			ErrPlanRefused, plan.PlanID, plan.Generated.Format(time.RFC3339), plan.HistoryRun, strings.Join(changes, "\n  - "))
	}

	// Tags first, then manifests by digest, indexes before their platform images.
	var runErr error
	for i, m := range plan.Manifests {
		if gone[i] {
			continue
		}
		for _, t := range m.Tags {
			found, err := reg.DeleteTag(ctx, m.Repository, t)
			if errors.Is(err, mirror.ErrDeleteUnsupported) {
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
		hd := HistoryDelete{Repository: m.Repository, Digest: m.Digest, Tags: m.Tags}
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
	hr := HistoryRun{Kind: RunDelete, Time: time.Now().UTC(), Destination: dest, Plan: plan.PlanID, Complete: runErr == nil,
		Deleted: append(append([]HistoryDelete(nil), res.Deleted...), res.AlreadyGone...)}
	if _, err := appendHistory(wd, hr); err != nil && runErr == nil {
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

// destination is "repo:firstTag", or "repo@digest" without a tag.
func (h HistoryImage) destination() string {
	if len(h.Tags) > 0 {
		return h.Repository + ":" + h.Tags[0]
	}
	return imageKey(h.Repository, h.Digest)
}

// regenerateClusterResources rewrites working-dir/cluster-resources from the
// latest mirror run to dest, without what was deleted since.
func regenerateClusterResources(wd, dest string) ([]string, error) {
	h, err := readHistory(wd)
	if err != nil {
		return nil, err
	}
	inv := buildInventory(h, dest)
	var last *HistoryRun
	for i := range h.Runs {
		if h.Runs[i].Destination == dest && h.Runs[i].Kind == RunMirror {
			last = &h.Runs[i]
		}
	}
	if last == nil {
		return nil, nil
	}
	var images []manifests.Image
	for _, im := range last.Images {
		if im.Kind == mirror.KindCatalog || inv.present[imageKey(im.Repository, im.Digest)] == nil {
			continue
		}
		images = append(images, manifests.Image{Source: im.Source, Destination: im.destination(), Digest: im.Digest.String(), Kind: manifests.Kind(im.Kind)})
	}
	var catalogs []manifests.Catalog
	for _, c := range last.Catalogs {
		if c.DestRepo == "" || inv.present[imageKey(c.DestRepo, c.Digest)] == nil {
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
	dir := filepath.Join(wd, "cluster-resources")
	if err := set.Write(dir); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range set.Files() {
		out = append(out, filepath.Join(dir, f.Name))
	}
	return out, nil
}

// WriteText prints what the delete command did.
func (r *DeleteResult) WriteText(w io.Writer, executed bool) {
	p := r.Plan
	if !executed {
		fmt.Fprintf(w, "delete plan %s written to %s\n", p.PlanID, r.PlanFile)
		fmt.Fprintf(w, "  destination %s; %s\n", p.Destination, p.Reason)
		byRepo := map[string]int{}
		tags := 0
		for _, m := range p.Manifests {
			byRepo[m.Repository]++
			tags += len(m.Tags)
		}
		fmt.Fprintf(w, "  %d manifest(s) to delete in %d repositories (%d tags); %d kept because a current selection still wants them or airlock does not own them\n", len(p.Manifests), len(byRepo), tags, len(p.Kept))
		for _, m := range p.Manifests {
			what := m.Source
			if m.ChildOf != "" {
				what = "platform image of " + m.ChildOf.String()
			}
			fmt.Fprintf(w, "  - %s  %s\n", imageKey(m.Repository, m.Digest), what)
		}
		for _, k := range p.Kept {
			fmt.Fprintf(w, "  = %s  %s\n", imageKey(k.Repository, k.Digest), strings.Join(k.Why, "; "))
		}
		fmt.Fprintf(w, "review it, then: airlock delete --delete-yaml-file %s docker://%s\n", r.PlanFile, p.Destination)
		return
	}
	fmt.Fprintf(w, "deleted %d manifest(s) and %d tag(s) from %s (plan %s)", len(r.Deleted), r.TagsDeleted, p.Destination, p.PlanID)
	if len(r.AlreadyGone) > 0 {
		fmt.Fprintf(w, "; %d were already gone", len(r.AlreadyGone))
	}
	fmt.Fprintln(w)
	if len(r.ClusterResources) > 0 {
		fmt.Fprintf(w, "cluster resources rewritten without them: %s\n", filepath.Dir(r.ClusterResources[0]))
	}
	fmt.Fprintln(w, "the registry frees the space in its garbage collection: airlock registry gc --root DIR for airlock registry serve (see afterDelete in the plan for other registries)")
}
