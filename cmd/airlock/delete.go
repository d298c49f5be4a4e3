package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

func init() { register(newDeleteCmd) }

func newDeleteCmd() *cobra.Command {
	var o deletion.Options
	var ws string
	cmd := &cobra.Command{
		Use:   "delete (--generate (-c delete-isc.yaml | --stale) --workspace file://DIR | --delete-yaml-file FILE) docker://REGISTRY[:PORT]/NAMESPACE",
		Short: "Plan, review, then execute the removal of images from a mirror registry",
		Long: `Delete removes images from a mirror registry in two steps, as oc-mirror v2 does,
but counting references over the workspace history (airlock history): an image
stays while any current selection (the latest run of each configuration file to
this registry) still wants it, whichever catalog or package wants it.

  airlock delete --generate -c delete-isc.yaml --workspace file://DIR docker://REG/NS
      plans the removal of what a DeleteImageSetConfiguration names (delete:
      operators, additionalImages, blockedImages as in oc-mirror v2)
  airlock delete --generate --stale --workspace file://DIR docker://REG/NS
      plans the removal of everything earlier runs mirrored that no current
      selection wants any more (what fell out of the catalogs' selection); the
      plan and the output name the selections counted. Dated configuration
      files (isc-2026-10.yaml, then isc-2026-11.yaml) each stay a selection
      until retired: airlock history retire isc-2026-10.yaml --workspace
      file://DIR, or count only the newest run with --selections latest
  airlock delete --delete-yaml-file DIR/working-dir/delete/delete-images.yaml docker://REG/NS
      executes exactly that plan, after review

The plan (DIR/working-dir/delete/delete-images.yaml) lists every manifest to delete
with its tags and why, and what it keeps and why. Execution deletes the tags first,
then the manifests by digest, and refuses to start when the registry changed since
the plan (a tag moved, a tag was added to a planned manifest, a later run mirrored
a planned image again) or when the file differs from the plan airlock recorded
(another registry, a manifest it never planned, edited tags); removing entries to
keep them is allowed. The cluster resources in DIR/working-dir/cluster-resources
are rewritten without what was deleted. The registry frees the space in its
garbage collection: airlock registry gc --root DIR for airlock registry serve.`,
		Example: `  airlock delete --generate --stale --workspace file://./ws docker://127.0.0.1:5000/mirror
  less ./ws/working-dir/delete/delete-images.yaml
  airlock delete --delete-yaml-file ./ws/working-dir/delete/delete-images.yaml docker://127.0.0.1:5000/mirror`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			o.Logger = log
			if o.Destination, err = location.ParseRegistry("destination", args[len(args)-1]); err != nil { // see addOCMirrorDeleteFlags
				return err
			}
			if err := dirFlag(&o.Workspace, "--workspace", ws); err != nil {
				return err
			}
			res, err := pipeline.Delete(cmd.Context(), o)
			if res != nil {
				res.WriteText(cmd.OutOrStdout(), !o.Generate)
			}
			if err != nil && errors.Is(err, workspace.ErrPlanRefused) {
				return &exitError{code: 3, msg: err.Error()}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Generate, "generate", false, "write a plan (DIR/working-dir/delete/delete-images.yaml) instead of deleting")
	f.StringVarP(&o.ConfigPath, "config", "c", "", "DeleteImageSetConfiguration: what to delete (with --generate)")
	f.BoolVar(&o.Stale, "stale", false, "plan what earlier runs mirrored and no current selection wants (with --generate)")
	f.StringVar(&o.Selections, "selections", "", "which selections --stale counts as current: all (the latest run of every configuration file not retired; default) or latest (only the newest run)")
	f.StringVar(&ws, "workspace", "", "file://DIR: the workspace of the mirror runs (required with --generate; default for --delete-yaml-file: the workspace the file is in)")
	f.StringVar(&o.PlanFile, "delete-yaml-file", "", "the reviewed plan to execute")
	f.StringVar(&o.AuthFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, containers auth.json, ~/.docker/config.json)")
	tlsVerifyFlag(f, &o.Insecure, "dest-tls-verify", "verify the registry's TLS certificate (false also allows plain HTTP)")
	f.StringVar(&o.DestCertDir, "dest-cert-dir", "", "folder of *.crt certificate authorities (and *.cert/*.key client certificates) for the registry (default: certs.d/HOST under ~/.config/containers, /etc/containers, /etc/docker)")
	f.IntVar(&o.RetryTimes, "retry-times", 5, "retries of a failed request, with exponential backoff")
	addOCMirrorDeleteFlags(cmd, &o)
	return cmd
}
