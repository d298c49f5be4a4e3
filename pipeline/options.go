package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/sigpolicy"
	"github.com/airlock-mirror/airlock/release/graph"
	relsig "github.com/airlock-mirror/airlock/release/signature"
	"github.com/airlock-mirror/airlock/workspace"
)

// Options are the mirror command's inputs, grouped by concern. Every zero
// value is the safe one: TLS certificates are verified and plain HTTP refused
// unless an Insecure field says otherwise, nothing is signed or skipped, and
// no retry, timeout or parallelism is invented (the CLI's flags give its
// defaults). ConfigPath and Destination.Location are required; Validate says
// which combinations are refused, and Mirror calls it first.
type Options struct {
	// ConfigPath is the ImageSetConfiguration (-c).
	ConfigPath string
	// Workspace is --workspace file://DIR: mirror-to-mirror's working files
	// (required), and disk-to-mirror's (default workspace.DefaultName in the
	// current directory; nothing is ever written into the archive folder).
	// Mirror-to-disk takes none: its working-dir is inside its destination.
	Workspace location.Location
	// CacheDir (--cache-dir, $OC_MIRROR_CACHE) holds the catalog cache shared
	// across workspaces (workspace.CatalogCacheDir); "" keeps it in working-dir.
	CacheDir string
	// AuthFile is --authfile: the credentials of every registry, source and
	// destination ("": the usual lookup, see registry.Options.AuthFile).
	AuthFile string

	Source      SourceOptions
	Destination DestinationOptions
	Archive     ArchiveOptions
	Signatures  SignatureOptions
	Releases    ReleaseOptions
	Network     NetworkOptions
	Run         RunOptions
	Output      OutputOptions

	// retry, when set, replaces the policy Network.RetryTimes makes (its
	// backoff too); timeouts bound how long a registry may stay silent (zero:
	// the defaults). Only this package's tests set them (export_test.go).
	retry    *retry.Policy
	timeouts registry.Timeouts
	// freeSpace, when set, replaces the archive filesystem's free space
	// (archive.WriterOptions.FreeSpace; tests of this package).
	freeSpace func(path string) (int64, error)
	// noPrefetch makes a run copy only once its plan is final, as a run
	// that cannot prefetch does (tests of this package: the reference a
	// prefetching run's archive is compared with).
	noPrefetch bool
	// sources are content sources added to the built-in ones (tests of
	// this package).
	sources []Source
}

// SourceOptions say how the source registries are reached.
type SourceOptions struct {
	// RegistriesConf is --registries-conf (see registry.LoadRegistriesConf).
	RegistriesConf string
	// CertDir is --src-cert-dir (see registry.Options.CertDir).
	CertDir string
	// Insecure is --src-tls-verify=false: certificates are not verified and
	// plain HTTP is allowed.
	Insecure bool
}

// DestinationOptions say where the images go and how that registry is reached.
type DestinationOptions struct {
	// Location is the positional argument: docker://REGISTRY[:PORT]/NAMESPACE
	// (mirror-to-mirror, or disk-to-mirror with Archive.From) or file://DIR
	// (mirror-to-disk), as location.ParseDestination reads it.
	Location location.Location
	// CertDir is --dest-cert-dir (see registry.Options.CertDir).
	CertDir string
	// Insecure is --dest-tls-verify=false: certificates are not verified and
	// plain HTTP is allowed.
	Insecure bool
	// MaxNestedPaths is --max-nested-paths (0: no limit).
	MaxNestedPaths int
	// CheckEveryImage is --check-every-image: a re-run asks the destination
	// about every image (a manifest request each) instead of trusting one
	// tag listing per repository for the images the last run recorded under
	// their digest-derived tags (transfer.Options.Recorded).
	CheckEveryImage bool
}

// ArchiveOptions are the archive's: what mirror-to-disk writes and how
// disk-to-mirror reads it.
type ArchiveOptions struct {
	// From is --from file://DIR: disk-to-mirror loads that archive (a batch
	// folder, or a target whose batches are loaded in order).
	From location.Location
	// Since (mirror-to-disk, --since) ships what archives made before it did
	// not carry.
	Since time.Time
	// SinceArchive (mirror-to-disk, --since-archive) ships only what the
	// archive in that folder did not carry, instead of what the workspace
	// state says.
	SinceArchive location.Location
	// Full (mirror-to-disk, --full) ignores earlier archives and ships every blob.
	Full bool
	// Strict (mirror-to-disk, --strict-archive) fails a blob bigger than
	// archiveSize.
	Strict bool
	// AllOrNothing (mirror-to-disk, --all-or-nothing) writes no batch when an
	// image fails. Without it the batch holds everything that succeeded and
	// records what failed (a partial batch: ErrPartial).
	AllOrNothing bool
	// SkipSpaceCheck (mirror-to-disk, --skip-space-check) goes on when the
	// archive's filesystem has less free space than the run will stage.
	SkipSpaceCheck bool
	// SignKey (mirror-to-disk, --sign-key) signs the archive; VerifyKey
	// (disk-to-mirror, --archive-key) refuses an archive it did not sign.
	SignKey, VerifyKey string
}

// SignatureOptions are the images' signatures and attachments.
type SignatureOptions struct {
	// Mode is --signatures: attachments carried, unsigned images listed or
	// failed ("" is best-effort).
	Mode signature.Mode
	// Refresh (--refresh-signatures) looks for every image's attachments
	// again, not only for digests no run looked at.
	Refresh bool
	// Key is --signature-key: a PEM public key; the cluster resources then
	// include ClusterImagePolicy objects requiring signatures by it.
	Key string
	// Policy is --policy, --secure-policy, --registries.d (docs/signatures.md).
	Policy sigpolicy.Options
}

// ReleaseOptions say how OpenShift releases (mirror.platform) are chosen and
// checked. The zero value asks Red Hat's update service and signature store
// (or $UPDATE_URL_OVERRIDE and $OCP_SIGNATURE_URL) and verifies every
// payload's signatures with Red Hat's release keys (or the file
// $OCP_SIGNATURE_VERIFICATION_PK names).
type ReleaseOptions struct {
	// GraphURL is --graph-url: the update service of every channel type.
	GraphURL string
	// AllowConditional is --allow-conditional-edges: shortest paths may take
	// updates the service recommends only to some clusters.
	AllowConditional bool
	// SignatureURL is --release-signature-url: the signature store's base URL.
	SignatureURL string
	// SignatureKeys is --release-signature-keys: a file of armored OpenPGP
	// public keys replacing Red Hat's release keys.
	SignatureKeys string
	// IgnoreSignatures is --ignore-release-signature: payloads are mirrored
	// without their signatures verified (each one is warned about).
	IgnoreSignatures bool
	// GraphDataURL is --graph-data-url: where mirror.platform.graph reads
	// the update service's graph-data tarball (default: OpenShift's).
	// GraphDataFile is --graph-data-file: the tarball as a local file, for
	// sites that cannot reach the service.
	GraphDataURL, GraphDataFile string
	// GraphBaseImage is --graph-base-image: the image the graph data is
	// added to (default: oc-mirror's, registry.access.redhat.com/ubi9/ubi).
	GraphBaseImage string

	// graphs and signatures, when set, replace the update service and the
	// signature store (this package's tests).
	graphs     graph.Fetcher
	signatures relsig.Store
}

// NetworkOptions tune the copy engine and its registry requests.
type NetworkOptions struct {
	// ParallelImages and ParallelLayers are --parallel-images and
	// --parallel-layers (0: the copy engine's defaults).
	ParallelImages, ParallelLayers int
	// RetryTimes is --retry-times: retries after the first attempt of any one
	// registry request (0: none).
	RetryTimes int
	// RetryDelay is --retry-delay: a fixed wait between retries (0: exponential
	// backoff). ImageTimeout is --image-timeout: how long one image may take
	// (0: no limit).
	RetryDelay, ImageTimeout time.Duration
}

// RunOptions say how much of the workflow runs: all of it, a plan only, or
// one shard of a plan.
type RunOptions struct {
	// DryRun plans only: mapping.txt, missing.txt and the bytes to send.
	DryRun bool
	// PlanOnly (--plan-only) writes working-dir/plan.json, with the blobs of
	// every image so that it can be sharded, and stops.
	PlanOnly bool
	// PlanFile (--plan FILE) is a plan --plan-only wrote: the run copies shard
	// Shard of Shards of it, or, with Finish, checks that every shard finished
	// and pushes the catalogs and writes the cluster resources.
	PlanFile      string
	Shard, Shards int
	Finish        bool
}

// OutputOptions are what the run tells its caller while it runs.
type OutputOptions struct {
	// Logger receives the run's log; nil discards it.
	Logger *slog.Logger
	// Progress, when set, receives the copy's progress against totals read from
	// the plan's manifests before the copy starts (the first call has the totals
	// and nothing done). Calls are serial.
	Progress func(Progress)
	// Stage, when set, is told once when each stage starts ("catalogs", "plan",
	// "measure", "copy", "archive", "cluster-resources"…). The run logs stages
	// at debug level only: announcing them is the caller's job.
	Stage func(stage string)
}

// workflow is the workflow the locations ask for ("" when they ask for none).
func (o *Options) workflow() mirror.Workflow {
	dest := o.Destination.Location
	switch {
	case !o.Archive.From.IsZero():
		return mirror.DiskToMirror
	case dest.Is(location.SchemeFile):
		return mirror.MirrorToDisk
	case dest.Is(location.SchemeDocker):
		return mirror.MirrorToMirror
	}
	return ""
}

// Validate checks the options against each other: every combination of the
// mirror command's flags that cannot run is refused here, with the flags to
// change, before anything is read or written.
func (o *Options) Validate() error {
	dest := o.Destination.Location
	if err := oci.RefuseCredentials(dest.String()); err != nil {
		return err
	}
	if o.ConfigPath == "" {
		return errors.New("no ImageSetConfiguration given: use -c imageset.yaml")
	}
	for _, l := range []struct {
		flag string
		l    location.Location
	}{{"--workspace", o.Workspace}, {"--from", o.Archive.From}, {"--since-archive", o.Archive.SinceArchive}} {
		if !l.l.IsZero() && !l.l.Is(location.SchemeFile) {
			return &location.Error{Flag: l.flag, Input: l.l.String(), Want: location.WantDir}
		}
	}
	wf := o.workflow()
	a, run := o.Archive, o.Run
	sharded := run.PlanFile != ""
	switch {
	case o.Signatures.Policy.Enabled() && (wf == mirror.DiskToMirror || sharded):
		return errors.New("--policy/--secure-policy judge the source registries when the plan is made (mirror-to-mirror, mirror-to-disk, --plan-only), not in disk-to-mirror (--from: use --archive-key) nor in a --plan run")
	case wf == mirror.DiskToMirror && !dest.Is(location.SchemeDocker):
		return fmt.Errorf("disk-to-mirror needs a registry destination docker://REGISTRY/NAMESPACE, got %q", dest.String())
	case wf == mirror.DiskToMirror:
		if _, err := workspace.DiskToMirrorDir(o.Workspace, o.Archive.From); err != nil {
			return err
		}
	case wf == mirror.MirrorToDisk && !o.Workspace.IsZero():
		return errors.New("--workspace is for mirror-to-mirror; mirror-to-disk writes its working-dir inside the file:// destination")
	case wf == mirror.MirrorToMirror && o.Workspace.IsZero():
		return errors.New("mirror-to-mirror needs --workspace file://DIR for its working files (or use --from file://DIR for disk-to-mirror)")
	case wf == "":
		return &location.Error{Flag: "destination", Input: dest.String(), Want: location.WantDestination}
	}
	switch {
	case wf != mirror.MirrorToDisk && (!a.SinceArchive.IsZero() || a.Full || !a.Since.IsZero()):
		return errors.New("--since, --since-archive and --full apply to mirror-to-disk only")
	case run.PlanOnly && sharded:
		return errors.New("--plan-only makes a plan; --plan FILE uses one: give one of them")
	case run.PlanOnly && run.DryRun:
		return errors.New("--plan-only and --dry-run both only plan: give one of them")
	case (run.PlanOnly || sharded) && wf == mirror.DiskToMirror:
		return errors.New("--plan-only and --plan apply to mirror-to-mirror and mirror-to-disk; disk-to-mirror loads an archive as it is")
	case sharded && run.DryRun:
		return errors.New("--dry-run makes its own plan: it does not take --plan FILE")
	case sharded && run.Finish && run.Shards > 0:
		return errors.New("--finish runs once after every shard: it takes no --shard")
	case sharded && !run.Finish && run.Shards < 1:
		return errors.New("--plan FILE needs --shard I/N (or --shards N with JOB_COMPLETION_INDEX), or --finish")
	case !sharded && (run.Finish || run.Shards > 0):
		return errors.New("--shard and --finish need the plan: --plan FILE (written by --plan-only)")
	case run.Shards > 0 && (run.Shard < 0 || run.Shard >= run.Shards):
		return fmt.Errorf("shard %d of %d: the index must be 0 to %d", run.Shard, run.Shards, run.Shards-1)
	}
	return o.Releases.validate(wf)
}

// validate refuses release options that cannot apply: disk-to-mirror reads
// the graphs and signatures the archive carries, never a service.
func (o ReleaseOptions) validate(wf mirror.Workflow) error {
	if wf == mirror.DiskToMirror && (o.GraphURL != "" || o.SignatureURL != "") {
		return errors.New("--graph-url and --release-signature-url are for the connected side: disk-to-mirror reads the update graphs and signatures the archive carries")
	}
	if wf == mirror.DiskToMirror && (o.GraphDataURL != "" || o.GraphDataFile != "" || o.GraphBaseImage != "") {
		return errors.New("--graph-data-url, --graph-data-file and --graph-base-image are for the connected side: disk-to-mirror pushes the graph-data image the archive carries")
	}
	if o.GraphDataURL != "" && o.GraphDataFile != "" {
		return errors.New("--graph-data-url and --graph-data-file both say where the graph data comes from: give one")
	}
	for _, u := range []struct{ flag, v string }{{"--graph-url", o.GraphURL}, {"--release-signature-url", o.SignatureURL}, {"--graph-data-url", o.GraphDataURL}} {
		if u.v != "" && !strings.HasPrefix(u.v, "https://") && !strings.HasPrefix(u.v, "http://") {
			return fmt.Errorf("%s %q: give an http(s) URL", u.flag, u.v)
		}
	}
	return nil
}
