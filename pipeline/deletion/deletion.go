// Package deletion owns the delete command: planning a deletion from the
// workspace history (what a DeleteImageSetConfiguration names, or what earlier
// runs mirrored that no current selection wants any more), resolving the
// candidates against the registry (the manifests and tags there, the platform
// manifests of an index, tags airlock does not own), and executing a reviewed
// plan (checking that the registry and the history are as the plan saw them,
// deleting tags then manifests, rewriting the cluster resources).
//
// deletion must not know how a mirror run is orchestrated: it never imports
// package pipeline. It reads what the runs recorded through package workspace
// (history, delete plans) and talks to the registry through mirror/registry.
package deletion

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/workspace"
)

// Options are the delete command's inputs. The zero value is the safe one:
// the registry's certificate is verified and plain HTTP refused unless
// Insecure says otherwise. Destination is required; Validate says which
// combinations are refused, and Run calls it first.
type Options struct {
	// Generate writes a plan (--generate) instead of executing one.
	Generate bool
	// Names says whether a DeleteImageSetConfiguration names a want (why
	// an image was mirrored): the rule of the content source of the want's
	// kind. pipeline.Delete sets it; without it -c names nothing.
	Names func(*imageset.DeleteImageSetConfiguration, workspace.Want) bool
	// ConfigPath is -c: a DeleteImageSetConfiguration (with Generate).
	ConfigPath string
	// Stale plans what earlier runs mirrored that no current selection wants.
	Stale bool
	// Selections (with Stale) says which selections are current:
	// workspace.SelectionsAll (default) or workspace.SelectionsLatest.
	Selections string
	// Workspace is --workspace file://DIR: the workspace of the mirror runs
	// (required with Generate).
	Workspace location.Location
	// Destination is docker://REGISTRY[:PORT][/NAMESPACE], the one the mirror
	// runs wrote to.
	Destination location.Location
	// PlanFile is --delete-yaml-file: the plan to execute.
	PlanFile string
	// DeleteID is --delete-id (with Generate): the plan is written to
	// delete/delete-images-ID.yaml, as oc-mirror names it.
	DeleteID string
	// AuthFile and RetryTimes as for mirror.
	AuthFile   string
	RetryTimes int
	// DestCertDir is --dest-cert-dir (see registry.Options.CertDir).
	DestCertDir string
	// Insecure is --dest-tls-verify=false: the registry's certificate is not
	// verified and plain HTTP is allowed.
	Insecure bool
	Logger   *slog.Logger
}

// Validate checks the options against each other: every combination of the
// delete command's flags that cannot run is refused here, before the
// workspace or the registry is touched.
func (o *Options) Validate() error {
	if err := oci.RefuseCredentials(o.Destination.String()); err != nil {
		return err
	}
	if !o.Destination.Is(location.SchemeDocker) {
		return &location.Error{Flag: "destination", Input: o.Destination.String(), Want: location.WantRegistry + ", the one the mirror runs wrote to"}
	}
	if !o.Workspace.IsZero() && !o.Workspace.Is(location.SchemeFile) {
		return &location.Error{Flag: "--workspace", Input: o.Workspace.String(), Want: location.WantDir}
	}
	switch {
	case o.Generate && o.PlanFile != "":
		return errors.New("--generate writes a plan and --delete-yaml-file executes one: give one of them")
	case o.Generate && o.Workspace.IsZero():
		return errors.New("--generate needs --workspace file://DIR: the workspace of the mirror runs, whose history says what is in the registry and why")
	case o.Generate && o.Stale && o.ConfigPath != "":
		return errors.New("--stale plans what no current selection wants, -c what a DeleteImageSetConfiguration names: give one of them")
	case o.Generate && o.Selections != "" && !o.Stale:
		return errors.New("--selections says which selections --stale counts: use it with --stale")
	case o.Generate && !o.Stale && o.ConfigPath == "":
		return errors.New("--generate needs -c delete-isc.yaml (a DeleteImageSetConfiguration) or --stale")
	case !o.Generate && o.PlanFile == "":
		return errors.New("nothing to do: plan with --generate (-c delete-isc.yaml or --stale), then execute the reviewed plan with --delete-yaml-file")
	case !o.Generate && (o.ConfigPath != "" || o.Stale):
		return errors.New("-c and --stale make a plan: use them with --generate; --delete-yaml-file executes a plan as it is")
	}
	return nil
}

// Result is what a delete command did.
type Result struct {
	// PlanFile is the plan written (Generate) or executed.
	PlanFile string                `json:"planFile"`
	Plan     *workspace.DeletePlan `json:"plan,omitempty"`
	// Deleted are the manifests removed; AlreadyGone those the registry no
	// longer had.
	Deleted     []workspace.HistoryDelete `json:"deleted,omitempty"`
	AlreadyGone []workspace.HistoryDelete `json:"alreadyGone,omitempty"`
	TagsDeleted int                       `json:"tagsDeleted,omitempty"`
	// TagsWithManifests: the registry cannot delete a tag alone (Distribution
	// 2.x), so each planned manifest was deleted by digest, which removed its
	// tags.
	TagsWithManifests bool `json:"tagsWithManifests,omitempty"`
	// Kept are planned manifests left in place on purpose (a tag not in the
	// plan points at them); Failed those whose deletion failed.
	Kept   []KeptEntry   `json:"kept,omitempty"`
	Failed []FailedEntry `json:"failed,omitempty"`
	// ClusterResources are the files rewritten without what was deleted.
	ClusterResources []string `json:"clusterResources,omitempty"`
}

// Run plans (Generate) or executes a deletion from a mirror registry, after
// Validate.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	dest := o.Destination.Path
	l, wd, err := lockWorkspace(o)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	if wd != "" {
		var done func()
		o.Logger, done = wd.OpenRunLog(o.Logger, time.Now(), "airlock delete", "generate", o.Generate, "stale", o.Stale,
			"config", o.ConfigPath, "plan", o.PlanFile, "destination", o.Destination.String())
		defer done()
	}
	reg := registry.New(registry.Options{
		AuthFile: o.AuthFile, SkipTLSVerify: o.Insecure, TLSFlag: "--dest-tls-verify=false", CertDir: o.DestCertDir,
		Retry: retry.Retries(o.RetryTimes), Logger: o.Logger,
	})
	if o.Generate {
		return generate(ctx, o, dest, reg)
	}
	return execute(ctx, o, dest, reg)
}

// lockWorkspace holds the workspace for the command (it writes plans and the
// history, which a mirror run on it writes too) and returns its working
// directory (for the run log); nil and "" when there is no workspace yet,
// which the command then reports.
func lockWorkspace(o Options) (*workspace.Lock, workspace.Dir, error) {
	var wd workspace.Dir
	var err error
	switch {
	case o.Generate:
		wd, err = workspace.OpenLocation(o.Workspace)
	case !o.Generate && o.PlanFile != "":
		wd, err = planWorkDir(o)
	}
	if err != nil || wd == "" {
		return nil, "", nil
	}
	if _, err := os.Stat(wd.Path()); err != nil {
		return nil, "", nil
	}
	l, err := wd.Lock(true, o.Logger)
	if err != nil {
		return nil, "", err
	}
	return l, wd, nil
}

// currentDesc names the runs of the current selections.
func currentDesc(inv *workspace.Inventory) string {
	var parts []string
	for _, r := range inv.CurrentRuns {
		parts = append(parts, fmt.Sprintf("run %d (%s)", r.Seq, r.ConfigPath))
	}
	if len(parts) == 0 {
		return "none counted"
	}
	return strings.Join(parts, ", ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none: every image the runs put there is planned"
	}
	return strings.Join(s, ", ")
}

// wantList lists the wants, each once, sorted.
func wantList(ws []workspace.RunWant) string {
	seen := map[string]bool{}
	var out []string
	for _, w := range ws {
		s := w.Want.String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// planWorkDir finds the workspace of a plan file: --workspace, else the
// working-dir the file is in (DIR/working-dir/delete/delete-images.yaml).
func planWorkDir(o Options) (workspace.Dir, error) {
	if !o.Workspace.IsZero() {
		return workspace.OpenLocation(o.Workspace)
	}
	abs, err := filepath.Abs(o.PlanFile)
	if err != nil {
		return "", err
	}
	d := filepath.Dir(abs)
	if filepath.Base(d) == workspace.DeleteDirName && filepath.Base(filepath.Dir(d)) == workspace.WorkingDirName {
		return workspace.Dir(filepath.Dir(d)), nil
	}
	return "", fmt.Errorf("%s is not inside a workspace (DIR/working-dir/delete/): give --workspace file://DIR, the workspace the plan was generated in", o.PlanFile)
}

// WriteText prints what the delete command did.
func (r *Result) WriteText(w io.Writer, executed bool) {
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
		if p.Selections != nil || p.NotCounted != nil {
			fmt.Fprintf(w, "  selections counted (their images are kept): %s\n", orNone(p.Selections))
			for _, n := range p.NotCounted {
				fmt.Fprintf(w, "  not counted: %s\n", n)
			}
		}
		for _, m := range p.Manifests {
			what := m.Source
			if m.ChildOf != "" {
				what = "platform image of " + m.ChildOf.String()
			}
			fmt.Fprintf(w, "  - %s  %s\n", workspace.ImageKey(m.Repository, m.Digest), what)
		}
		for _, k := range p.Kept {
			fmt.Fprintf(w, "  = %s  %s\n", workspace.ImageKey(k.Repository, k.Digest), strings.Join(k.Why, "; "))
		}
		fmt.Fprintf(w, "review it, then: airlock delete --delete-yaml-file %s docker://%s\n", r.PlanFile, p.Destination)
		return
	}
	fmt.Fprintf(w, "deleted %d manifest(s) and %d tag(s) from %s (plan %s)", len(r.Deleted), r.TagsDeleted, p.Destination, p.PlanID)
	if len(r.AlreadyGone) > 0 {
		fmt.Fprintf(w, "; %d were already gone", len(r.AlreadyGone))
	}
	fmt.Fprintln(w)
	if r.TagsWithManifests {
		fmt.Fprintln(w, "  the registry cannot delete a tag alone (Distribution 2.x): each manifest was deleted by digest instead, which removed its tags with it")
	}
	for _, k := range r.Kept {
		fmt.Fprintf(w, "  = kept %s: %s\n", workspace.ImageKey(k.Repository, k.Digest), k.Why)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(w, "  ! not deleted %s: %s\n", workspace.ImageKey(f.Repository, f.Digest), f.Error)
	}
	if len(r.ClusterResources) > 0 {
		fmt.Fprintf(w, "cluster resources rewritten without them: %s\n", filepath.Dir(r.ClusterResources[0]))
	}
	fmt.Fprintln(w, "the registry frees the space in its garbage collection: airlock registry gc --root DIR for airlock registry serve (see afterDelete in the plan for other registries)")
}
