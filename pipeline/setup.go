package pipeline

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/sigpolicy"
	"github.com/airlock-mirror/airlock/workspace"
)

// Setting a run up: the workflow from the command line's locations, the working
// directory.

// setup reads what Validate checked: the configuration, the workflow and
// its folders, the working directory.
func (r *run) setup() error {
	o := r.opts
	cfg, err := imageset.LoadFile(o.ConfigPath)
	if err != nil {
		return err
	}
	r.cfg = cfg
	if r.batch != nil {
		r.cfg = r.batch // an earlier batch of --from TARGET, as it was made
	}
	if r.regconf, err = registry.LoadRegistriesConf(o.Source.RegistriesConf); err != nil {
		return err
	}
	r.workflow = o.workflow()
	for _, im := range r.cfg.SourceImages() {
		if err := r.regconf.Qualified(im.Name); err != nil && r.workflow != mirror.DiskToMirror { // disk-to-mirror reads no source
			return fmt.Errorf("%s line %d: %w", r.cfg.Source, im.Line, err)
		}
	}
	switch r.workflow {
	case mirror.DiskToMirror:
		r.topDir, r.dest = o.Archive.From.Path, o.Destination.Location.Path
		if r.workspace, err = workspace.DiskToMirrorDir(o.Workspace, o.Archive.From); err != nil {
			return err
		}
	case mirror.MirrorToDisk:
		r.topDir, r.workspace = o.Destination.Location.Path, o.Destination.Location.Path
	default:
		dir, err := workspace.WorkspaceDir(o.Workspace)
		if err != nil {
			return err
		}
		r.topDir, r.workspace, r.dest = dir, dir, o.Destination.Location.Path
	}
	r.workDir = workspace.At(r.workspace)
	part := ""
	if o.Run.PlanFile != "" && !o.Run.Finish {
		// Shards of one plan may share a workspace (the plan's, a target):
		// each keeps its working files (its part of the plan, results,
		// report) apart, and never writes the plan it reads.
		part = archive.ShardPart(o.Run.Shard, o.Run.Shards)
		r.workDir = r.workDir.Shard(part)
	}
	if err := os.MkdirAll(r.workDir.Path(), 0o755); err != nil {
		return fmt.Errorf("create working directory: %w", err)
	}
	if r.policy, err = sigpolicy.Open(o.Signatures.Policy, sigpolicy.Source{AuthFile: o.AuthFile, Insecure: o.Source.Insecure, CertDir: o.Source.CertDir, Timeout: o.Network.ImageTimeout, DefaultRegistriesDir: r.workDir.RegistriesDDir(), RegistriesConf: r.regconf.Path()}); err != nil {
		return err
	}
	r.res = &Result{Workflow: r.workflow, WorkingDir: r.workDir.Path(), ConfigPath: absOrSame(o.ConfigPath), PlanPath: absOrSame(o.Run.PlanFile)}
	// Last: a run refused here has written nothing.
	r.locks, err = workspace.LockRun(workspace.At(r.workspace), part, r.log)
	return err
}

// absOrSame is p made absolute ("" stays ""), for the commands a run suggests.
func absOrSame(p string) string {
	if a, err := filepath.Abs(p); err == nil && p != "" {
		return a
	}
	return p
}
