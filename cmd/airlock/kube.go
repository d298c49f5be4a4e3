package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline/kubejob"
)

func init() {
	registerUnder("kube", newKubeJobCmd)
	registerUnder("kube", newKubeImageCmd)
}

func newKubeImageCmd() *cobra.Command {
	var o kubejob.ImageOptions
	cmd := &cobra.Command{
		Use:   "image docker://REGISTRY/REPOSITORY[:TAG]",
		Short: "Push a minimal image holding this airlock binary, for the Job's pods",
		Long: `Build an image holding only the airlock binary (plus /etc/passwd for its
unprivileged user 65532 and an empty /tmp) and push it, without a container
engine, so that airlock kube job's pods can run in a cluster that reaches only the
mirror registry. The binary is this one, unless --binary names another: it must be
a static Linux executable (CGO_ENABLED=0). TAG defaults to airlock's version.
The same binary always gives the same image digest, which is printed for --image.`,
		Example: `  airlock kube image docker://mirror.example:5000/tools/airlock:v1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			o.Logger, o.Version = log, Version()
			if o.Destination, err = location.ParseImage("destination", args[0]); err != nil {
				return err
			}
			if o.Binary == "" {
				if o.Binary, err = os.Executable(); err != nil {
					return err
				}
			}
			res, err := kubejob.Image(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "pushed %s (tag %s, layer %s, %s sent)\n", res.Reference, res.Tag, humanize.Bytes(res.Size), humanize.Bytes(res.BytesSent))
			fmt.Fprintln(cmd.OutOrStdout(), res.Reference)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Binary, "binary", "", "the airlock executable to put in the image (default: this one)")
	f.StringVar(&o.Arch, "arch", "", "the binary's architecture (default: this machine's)")
	f.StringVar(&o.AuthFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, containers auth.json, ~/.docker/config.json)")
	tlsVerifyFlag(f, &o.Insecure, "dest-tls-verify", "verify TLS certificates of the registry (false also allows plain HTTP)")
	f.IntVar(&o.RetryTimes, "retry-times", 5, "retries of a failed request, with exponential backoff")
	return cmd
}

func newKubeJobCmd() *cobra.Command {
	var o kubejob.JobOptions
	cmd := &cobra.Command{
		Use:   "job -c imageset.yaml --plan FILE --shards N --image REF docker://REGISTRY/NAMESPACE",
		Short: "Print the ConfigMap, Indexed Job and finish Job that mirror a plan in N shards",
		Long: `Print, for kubectl apply -f -, the manifests that run a mirror-to-mirror plan
(airlock mirror --plan-only) as a Kubernetes Indexed Job:

  - a ConfigMap with the ImageSetConfiguration and the plan (refused when they do
    not fit its 1 MiB limit);
  - an Indexed batch/v1 Job: N completions, each pod copying the shard
    $JOB_COMPLETION_INDEX (airlock mirror --plan --shards N), retried per index;
  - a finish Job (airlock mirror --plan --finish) that checks every image is at
    the destination, then pushes the catalogs and writes the cluster resources.

The pods read registry credentials from auth.json in a Secret (--auth-secret) that
the manifests reference but do not hold, and the sources through the registries.conf
of --registries-conf (or $CONTAINERS_REGISTRIES_CONF), carried in the ConfigMap. The header says how the plan splits.`,
		Example: `  airlock mirror -c isc.yaml --workspace file://ws --plan-only docker://mirror.example:5000/ocp
  airlock kube image docker://mirror.example:5000/tools/airlock:v1
  airlock kube job -c isc.yaml --plan ws/working-dir/plan.json --shards 4 \
      --image mirror.example:5000/tools/airlock:v1 docker://mirror.example:5000/ocp | kubectl apply -f -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Destination, err = location.ParseRegistry("destination", args[0]); err != nil {
				return err
			}
			out, err := kubejob.Job(o)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigPath, "config", "c", "", "the ImageSetConfiguration the plan was made with (required)")
	f.StringVar(&o.PlanFile, "plan", "", "plan.json written by airlock mirror --plan-only (required)")
	f.IntVar(&o.Shards, "shards", 0, "number of shards: the Job's completions (required)")
	f.IntVar(&o.Parallelism, "parallelism", 0, "shards running at once (default: all)")
	f.IntVar(&o.BackoffLimitPerIndex, "backoff-limit-per-index", 3, "retries of one shard's pod")
	f.StringVar(&o.Image, "image", "", "the airlock image the pods run (airlock kube image pushes one) (required)")
	f.StringVar(&o.Name, "name", "airlock-mirror", "name of the ConfigMap and Job (the finish Job adds -finish)")
	f.StringVarP(&o.Namespace, "namespace", "n", "", "namespace written into the manifests (default: kubectl's)")
	f.StringVar(&o.AuthSecret, "auth-secret", "", "Secret holding auth.json (default NAME-auth)")
	f.StringVar(&o.RegistriesConfPath, "registries-conf", "", "registries.conf the pods read the sources through, carried in the ConfigMap (default: $CONTAINERS_REGISTRIES_CONF when set; this machine's system files are not carried)")
	f.StringArrayVar(&o.Args, "mirror-arg", nil, "more airlock mirror flags for the pods, e.g. --mirror-arg=--dest-tls-verify=false (repeatable)")
	for _, r := range []string{"config", "plan", "shards", "image"} {
		_ = cmd.MarkFlagRequired(r)
	}
	return cmd
}
