package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/pipeline"
)

func init() {
	registerUnder("kube", newKubeJobCmd)
}

func newKubeJobCmd() *cobra.Command {
	var o pipeline.KubeJobOptions
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
the manifests reference but do not hold. The header says how the plan splits.`,
		Example: `  airlock mirror -c isc.yaml --workspace file://ws --plan-only docker://mirror.example:5000/ocp
  airlock kube image docker://mirror.example:5000/tools/airlock:v1
  airlock kube job -c isc.yaml --plan ws/working-dir/plan.json --shards 4 \
      --image mirror.example:5000/tools/airlock:v1 docker://mirror.example:5000/ocp | kubectl apply -f -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Destination = args[0]
			out, err := pipeline.KubeJob(o)
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
	f.StringArrayVar(&o.Args, "mirror-arg", nil, "more airlock mirror flags for the pods, e.g. --mirror-arg=--dest-tls-verify=false (repeatable)")
	for _, r := range []string{"config", "plan", "shards", "image"} {
		_ = cmd.MarkFlagRequired(r)
	}
	return cmd
}
