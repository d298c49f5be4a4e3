package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/workspace"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { register(newMirrorCmd) }

func newMirrorCmd() *cobra.Command {
	var o pipeline.Options
	var ws, from, sinceArchive string
	var shard string
	var shards int
	var signatures func(io.Writer) (signature.Mode, error)
	cmd := &cobra.Command{
		Use:   "mirror -c imageset.yaml (file://DIR | docker://REGISTRY[:PORT]/NAMESPACE)",
		Short: "Mirror what an ImageSetConfiguration names: mirror-to-mirror, mirror-to-disk, disk-to-mirror",
		Long: `Mirror the catalogs and images an ImageSetConfiguration names.

  airlock mirror -c imageset.yaml --workspace file://DIR docker://REGISTRY/NS   # mirror-to-mirror
  airlock mirror -c imageset.yaml file://TARGET                                # mirror-to-disk: writes TARGET/batch-NNNN
  airlock mirror -c imageset.yaml --from file://TARGET/batch-NNNN [--workspace file://DIR] docker://REGISTRY/NS
                                                                               # disk-to-mirror

Every catalog is fetched once (its tag pinned to a digest), pruned to what the
configuration asks for, and rebuilt as a new catalog image. Every image is resolved
to a digest, copied with each blob sent once, and verified. The working files, plan
(plan.json, mapping.txt), results (results.json) and cluster resources
(cluster-resources/) go to DIR/working-dir (TARGET/working-dir for mirror-to-disk).
Running the same command again after an interruption copies only what is missing.
--dry-run plans only and writes dry-run/mapping.txt and dry-run/missing.txt with
the bytes that would be sent.

Mirror-to-disk never rewrites a finished archive: each run writes the next batch
(batch-0001 full, then incrementals that ship only new blobs); an interrupted run
resumes its own unfinished batch. Disk-to-mirror loads one batch, in order after the
batches it builds on, writes nothing into the archive folder (working files go to
--workspace, default ./airlock-workspace), and applies its configuration again: asking
for more than the batch holds is an error naming what is missing, asking for less
pushes a catalog pruned again to it and only its images.

Sharded (several machines or Kubernetes pods): --plan-only writes the plan once;
--plan FILE --shard I/N copies shard I (mirror-to-mirror: into the registry;
mirror-to-disk: its own chunks into TARGET's unfinished batch); --plan FILE
--finish, once every shard finished, pushes the catalogs (mirror-to-mirror) or
writes the catalogs, the manifests and the archive manifest (mirror-to-disk).

Exit status: 0 when everything was mirrored, 1 on an error, 2 when some images
failed (they are listed in working-dir/results.json), 130 when interrupted.`,
		Args: oneDestination,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if err := shardFlags(&o, shard, shards); err != nil {
				return err
			}
			if o.Signatures.Mode, err = signatures(cmd.ErrOrStderr()); err != nil {
				return err
			}
			if o.Destination.Location, err = location.ParseDestination(args[0]); err != nil {
				return err
			}
			for _, d := range []struct {
				l         *location.Location
				flag, arg string
			}{{&o.Workspace, "--workspace", ws}, {&o.Archive.From, "--from", from}, {&o.Archive.SinceArchive, "--since-archive", sinceArchive}} {
				if err := dirFlag(d.l, d.flag, d.arg); err != nil {
					return err
				}
			}
			log = quietOnTerminal(cmd.ErrOrStderr(), log, cmd.Flags().Changed("log-level"))
			o.Output.Logger = log
			stop := attachProgress(&o, cmd.ErrOrStderr(), log)
			res, err := pipeline.Mirror(cmd.Context(), o)
			stop()
			// A summary once something was copied or estimated; an error before
			// that speaks for itself.
			if res != nil && (res.Copy != nil || res.DryRun != nil || res.NothingNew != nil) {
				res.WriteSummary(cmd.ErrOrStderr())
			}
			if res != nil && o.Run.PlanOnly && err == nil {
				writePlanSummary(cmd.ErrOrStderr(), res)
			}
			if res != nil && o.Run.Finish && err == nil {
				// A finish pod's working-dir goes with the pod: its cluster
				// resources are printed for kubectl logs.
				if perr := printFiles(cmd.OutOrStdout(), res.ClusterResources); perr != nil {
					return perr
				}
			}
			if err != nil {
				if cmd.Context().Err() != nil {
					return &exitError{code: 130, msg: "interrupted: run the same command again to finish; nothing already copied is copied again"}
				}
				if errors.Is(err, pipeline.ErrIncomplete) {
					return &exitError{code: exitCode(err), msg: err.Error()}
				}
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	signatures = addSignatureFlags(f, &o)
	addReleaseFlags(f, &o)
	f.StringVarP(&o.ConfigPath, "config", "c", "", "ImageSetConfiguration file (required)")
	f.StringVar(&ws, "workspace", "", "file://DIR for working files: mirror-to-mirror (required), disk-to-mirror (default ./"+workspace.DefaultName+")")
	f.StringVar(&from, "from", "", "file://DIR: a batch folder of a mirror-to-disk target, to load (disk-to-mirror)")
	f.BoolVar(&o.Run.DryRun, "dry-run", false, "plan only: write mapping.txt, missing.txt and the bytes to send")
	f.IntVar(&o.Destination.MaxNestedPaths, "max-nested-paths", 0, "flatten destination paths deeper than N components (0: no limit); forces repository-scoped mirror sets")
	f.BoolVar(&o.Destination.CheckEveryImage, "check-every-image", false, "re-runs: ask the destination about every image (a manifest request each) instead of one tag listing per repository for the images the last run left under their sha256-<hex> tags")
	f.StringVar(&o.AuthFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, containers auth.json, ~/.docker/config.json)")
	tlsVerifyFlag(f, &o.Source.Insecure, "src-tls-verify", "verify TLS certificates of source registries (false also allows plain HTTP)")
	tlsVerifyFlag(f, &o.Destination.Insecure, "dest-tls-verify", "verify TLS certificates of the destination registry (false also allows plain HTTP)")
	f.StringVar(&o.Source.CertDir, "src-cert-dir", "", "folder of *.crt certificate authorities (and *.cert/*.key client certificates) for source registries (default: certs.d/HOST under ~/.config/containers, /etc/containers, /etc/docker)")
	f.StringVar(&o.Source.RegistriesConf, "registries-conf", "", "registries.conf for source registries: mirrors, blocked and insecure registries (default: $CONTAINERS_REGISTRIES_CONF, else ~/.config/containers/registries.conf or /etc/containers/registries.conf and registries.conf.d)")
	f.StringVar(&o.Destination.CertDir, "dest-cert-dir", "", "folder of *.crt certificate authorities (and *.cert/*.key client certificates) for the destination registry (default: certs.d/HOST as for --src-cert-dir)")
	f.IntVar(&o.Network.ParallelImages, "parallel-images", transfer.DefaultParallelImages, "the most images copied at once (4 always; more while the registries' adaptive transfer limits have room; an image pushing its manifest, its blobs all sent, no longer counts)")
	f.IntVar(&o.Network.ParallelLayers, "parallel-layers", transfer.DefaultParallelLayers, "blobs of one image copied at once")
	f.IntVar(&o.Network.RetryTimes, "retry-times", 5, "retries of a failed request, with exponential backoff")
	f.DurationVar(&o.Network.RetryDelay, "retry-delay", 0, "fixed wait between retries (0: exponential backoff from 250ms, or the registry's Retry-After)")
	f.DurationVar(&o.Network.ImageTimeout, "image-timeout", 10*time.Minute, "how long one image's copy may take before it fails (0: no limit)")
	f.StringVar(&sinceArchive, "since-archive", "", "mirror-to-disk: ship only blobs the archive in this directory (a batch, or a target's last batch) did not carry")
	f.BoolVar(&o.Archive.AllOrNothing, "all-or-nothing", false, "mirror-to-disk: write no batch when an image fails (default: the batch holds what succeeded and records what failed; exit code 2)")
	f.BoolVar(&o.Archive.Full, "full", false, "mirror-to-disk: the next batch ships every blob and builds on no earlier batch")
	f.BoolVar(&o.Run.PlanOnly, "plan-only", false, "write working-dir/plan.json (with every image's blobs, for --shard) and stop")
	f.StringVar(&o.Run.PlanFile, "plan", "", "a plan.json --plan-only wrote: copy one shard of it (--shard, --shards) or --finish it")
	f.StringVar(&shard, "shard", "", "I/N: copy shard I (0…N-1) of N of the --plan")
	f.IntVar(&shards, "shards", 0, "N: copy shard $JOB_COMPLETION_INDEX of N of the --plan (a Kubernetes Indexed Job)")
	f.BoolVar(&o.Run.Finish, "finish", false, "with --plan: check every shard finished (every planned image at the destination, or in a shard's chunks), then push the catalogs and write the cluster resources (mirror-to-disk: write the catalogs and assemble the archive)")
	_ = cmd.MarkFlagRequired("config")
	addOCMirrorMirrorFlags(cmd, &o)
	return cmd
}

// shardFlags turns --shard I/N, or --shards N and $JOB_COMPLETION_INDEX (set by
// Kubernetes in the pods of an Indexed Job), into the options.
func shardFlags(o *pipeline.Options, shard string, shards int) error {
	switch {
	case shard != "" && shards != 0:
		return errors.New("give --shard I/N or --shards N, not both")
	case shard != "":
		i, n, ok := strings.Cut(shard, "/")
		a, err1 := strconv.Atoi(i)
		b, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || b < 1 || a < 0 || a >= b {
			return fmt.Errorf("--shard %q: want I/N with 0 <= I < N, e.g. --shard 0/4", shard)
		}
		o.Run.Shard, o.Run.Shards = a, b
	case shards < 0:
		return fmt.Errorf("--shards %d: want a positive count", shards)
	case shards > 0:
		v, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
		if !ok {
			return errors.New("--shards N reads the shard index from $JOB_COMPLETION_INDEX (set in the pods of an Indexed Job): it is not set; use --shard I/N")
		}
		a, err := strconv.Atoi(v)
		if err != nil || a < 0 || a >= shards {
			return fmt.Errorf("$JOB_COMPLETION_INDEX=%q: want 0 to %d for --shards %d", v, shards-1, shards)
		}
		o.Run.Shard, o.Run.Shards = a, shards
	}
	return nil
}

// writePlanSummary says what --plan-only wrote.
func writePlanSummary(w io.Writer, res *pipeline.Result) {
	var images, failed int
	var bytes int64
	seen := map[string]bool{}
	for _, im := range res.Plan.Images {
		switch {
		case im.Error != "":
			failed++
		default:
			images++
		}
		for _, b := range im.Blobs {
			if !seen[b.Digest.String()] {
				seen[b.Digest.String()] = true
				bytes += b.Size
			}
		}
	}
	fmt.Fprintf(w, "plan written to %s: %d images (%d blobs, %s) and %d catalog(s); %d image(s) could not be planned\n",
		workspace.Dir(res.WorkingDir).PlanPath(), images, len(seen), humanize.Bytes(bytes), len(res.Plan.Catalogs), failed)
}

// printFiles writes the YAML files as one stream.
func printFiles(w io.Writer, paths []string) error {
	for _, p := range paths {
		if !strings.HasSuffix(p, ".yaml") {
			continue // README.txt
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "---\n# %s\n%s", p, strings.TrimPrefix(string(b), "---\n"))
	}
	return nil
}
