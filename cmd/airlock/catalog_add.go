package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { registerUnder("catalog", newCatalogAddCmd) }

func newCatalogAddCmd() *cobra.Command {
	var (
		o         pipeline.AddBundleOptions
		authFile  string
		tlsVerify bool
	)
	cmd := &cobra.Command{
		Use:   "add --bundle REF|DIR --channel C [--replaces X] [--skips A,B] [--skip-range R] CATALOGDIR",
		Short: "Add a bundle (image or unpacked folder) to a file-based catalog folder",
		Long: `Add one operator bundle to the file-based catalog rooted at CATALOGDIR: the common
"add my operator to a mirrored catalog" job.

--bundle is a bundle image (registry reference or oci://PATH; recorded in the catalog
by digest) or an unpacked bundle folder (manifests/ and metadata/annotations.yaml;
recorded without an image, its manifests inlined). It is rendered as "opm render"
of opm v1.73 does, then added to its package (created, with --channel as default
channel, when the catalog lacks it) and to the channel --channel (created when
missing). The channel entry replaces the CSV's spec.replaces when that bundle is in
the channel (--replaces names another, which must be in the channel), skips the
CSV's spec.skips (--skips overrides) and has the CSV's olm.skipRange (--skip-range
overrides).

The bundle is refused when the package already holds it or its version, when the
channel's head would not be replaced or skipped (two heads), and when the catalog
would break any opm validate rule. The catalog is rewritten deterministically (one
<package>/catalog.json per package) in place, or into --output-dir.`,
		Example: `  airlock catalog add --bundle quay.io/acme/widget-bundle:v1.2.0 --channel stable ./catalog
  airlock catalog add --bundle ./widget-bundle --channel fast --replaces widget.v1.1.0 ./catalog -o ./new-catalog`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if _, _, err := outputFlag(cmd, o.OutDir, "folder the catalog is written to", []string{"json", "yaml"}, false); err != nil {
				return err
			}
			o.Catalog = args[0]
			o.Add.ReplacesSet = cmd.Flags().Changed("replaces")
			if !cmd.Flags().Changed("skips") {
				o.Add.Skips = nil
			} else if o.Add.Skips == nil {
				o.Add.Skips = []string{}
			}
			var done func()
			if o.WorkDir, log, done, err = catalogCache(cmd, o.WorkDir, log); err != nil {
				return err
			}
			defer done()
			if o.Fetch, err = catalogimage.SourceFetchOptions(authFile, tlsVerify, log); err != nil {
				return err
			}
			res, err := pipeline.AddBundle(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.String())
			fmt.Fprintf(cmd.OutOrStdout(), "channel %s head: %s\n", res.Channel, res.Head)
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%d packages, %d channels, %d bundles)\n", res.Dir, res.Counts.Packages, res.Counts.Channels, res.Counts.Bundles)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Bundle, "bundle", "", "bundle image reference, oci://PATH, or unpacked bundle folder (required)")
	f.StringVar(&o.Add.Channel, "channel", "", "channel to add the bundle to (required)")
	f.StringVar(&o.Add.Replaces, "replaces", "", "the entry of the channel the bundle replaces (default: the CSV's spec.replaces when it is in the channel; \"\" for none)")
	f.StringSliceVar(&o.Add.Skips, "skips", nil, "entries the bundle skips (default: the CSV's spec.skips)")
	f.StringVar(&o.Add.SkipRange, "skip-range", "", "the entry's skipRange (default: the CSV's olm.skipRange annotation)")
	f.StringVarP(&o.OutDir, "output-dir", "o", "", "write the result to this folder (empty or absent) instead of replacing CATALOGDIR")
	f.StringVar(&o.Format, "format", "json", "format of the written catalog: json or yaml")
	f.StringVar(&o.WorkDir, "workspace", "", "file://DIR or DIR: a workspace; fetched catalogs are kept in its working-dir/operator-catalogs, as airlock mirror keeps them (default: a temporary folder)")
	f.StringVar(&authFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, the containers auth.json, then ~/.docker/config.json)")
	f.BoolVar(&tlsVerify, "src-tls-verify", true, "verify the registry's TLS certificate (false also allows plain HTTP)")
	_ = cmd.MarkFlagRequired("bundle")
	_ = cmd.MarkFlagRequired("channel")
	return cmd
}
