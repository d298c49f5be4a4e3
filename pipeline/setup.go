package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/sigpolicy"
	"github.com/airlock-mirror/airlock/workspace"
)

// Setting a run up: the workflow from the command line's locations, the working
// directory.

func (r *run) setup() error {
	o := r.opts
	if err := oci.RefuseCredentials(o.Destination); err != nil {
		return err
	}
	if o.ConfigPath == "" {
		return errors.New("no ImageSetConfiguration given: use -c imageset.yaml")
	}
	cfg, err := imageset.LoadFile(o.ConfigPath)
	if err != nil {
		return err
	}
	r.cfg = cfg
	if o.batchConfig != nil {
		r.cfg = o.batchConfig // an earlier batch of --from TARGET, as it was made
	}
	if r.regconf, err = registry.LoadRegistriesConf(o.RegistriesConf); err != nil {
		return err
	}
	for _, im := range r.cfg.SourceImages() {
		if err := r.regconf.Qualified(im.Name); err != nil && o.From == "" { // disk-to-mirror reads no source
			return fmt.Errorf("%s line %d: %w", r.cfg.Source, im.Line, err)
		}
	}
	switch {
	case o.From != "":
		if !strings.HasPrefix(o.Destination, "docker://") {
			return fmt.Errorf("disk-to-mirror needs a registry destination docker://REGISTRY/NAMESPACE, got %q", o.Destination)
		}
		dir, err := workspace.FileDir(o.From, "--from")
		if err != nil {
			return err
		}
		r.workflow, r.topDir = mirror.DiskToMirror, dir
		r.dest = strings.TrimPrefix(o.Destination, "docker://")
		if r.workspace, err = workspace.DiskToMirrorDir(o.Workspace); err != nil {
			return err
		}
		if archAbs, err := filepath.Abs(dir); err == nil && within(r.workspace, archAbs) {
			return fmt.Errorf("--workspace %s is inside the archive folder %s: disk-to-mirror writes nothing into the archive (it may be read-only media); choose another folder", r.workspace, dir)
		}
	case strings.HasPrefix(o.Destination, "file://"):
		if o.Workspace != "" {
			return errors.New("--workspace is for mirror-to-mirror; mirror-to-disk writes its working-dir inside the file:// destination")
		}
		dir, err := workspace.FileDir(o.Destination, "destination")
		if err != nil {
			return err
		}
		r.workflow, r.topDir, r.workspace = mirror.MirrorToDisk, dir, dir
	case strings.HasPrefix(o.Destination, "docker://"):
		if o.Workspace == "" {
			return errors.New("mirror-to-mirror needs --workspace file://DIR for its working files (or use --from file://DIR for disk-to-mirror)")
		}
		dir, err := workspace.WorkspaceDir(o.Workspace)
		if err != nil {
			return err
		}
		r.workflow, r.topDir, r.workspace = mirror.MirrorToMirror, dir, dir
		r.dest = strings.TrimPrefix(o.Destination, "docker://")
	default:
		return fmt.Errorf("destination %q must be docker://REGISTRY[:PORT]/NAMESPACE or file://DIR", o.Destination)
	}
	if r.workflow != mirror.MirrorToDisk && (o.SinceArchive != "" || o.Full || !o.Since.IsZero()) {
		return errors.New("--since, --since-archive and --full apply to mirror-to-disk only")
	}
	if err := r.checkSharding(); err != nil {
		return err
	}
	r.workDir = workspace.At(r.workspace)
	part := ""
	if o.PlanFile != "" && !o.Finish {
		// Shards of one plan may share a workspace (the plan's, a target):
		// each keeps its working files (its part of the plan, results,
		// report) apart, and never writes the plan it reads.
		part = archive.ShardPart(o.Shard, o.Shards)
		r.workDir = r.workDir.Shard(part)
	}
	if err := os.MkdirAll(r.workDir.Path(), 0o755); err != nil {
		return fmt.Errorf("create working directory: %w", err)
	}
	if r.policy, err = sigpolicy.Open(o.Policy, sigpolicy.Source{AuthFile: o.AuthFile, Insecure: !o.SrcTLSVerify, CertDir: o.SrcCertDir, Timeout: o.ImageTimeout, DefaultRegistriesDir: r.workDir.RegistriesDDir(), RegistriesConf: r.regconf.Path()}); err != nil {
		return err
	}
	r.res = &Result{Workflow: r.workflow, WorkingDir: r.workDir.Path(), ConfigPath: absOrSame(o.ConfigPath), PlanPath: absOrSame(o.PlanFile)}
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

// within reports whether path p is dir or inside it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
