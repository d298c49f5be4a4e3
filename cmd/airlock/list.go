package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { registerUnder("list", newListOperatorsCmd) }

func newListOperatorsCmd() *cobra.Command {
	var (
		o         pipeline.ListOperatorsOptions
		authFile  string
		tlsVerify bool
	)
	cmd := &cobra.Command{
		Use:   "operators --catalog REF [--package P [--channel C]]",
		Short: "List the packages, channels and bundles of an operator catalog",
		Long: `List what an operator catalog holds, to help write an ImageSetConfiguration.

--catalog is a catalog image (registry.redhat.io/redhat/redhat-operator-index:v4.18,
with or without docker://), an OCI image layout (oci://PATH or oci://PATH:TAG), or a
local file-based catalog directory. An image is resolved to a digest once and only
its catalog folder (the label operators.operatorframework.io.index.configs.v1) is
extracted.

Without --package: every package and its default channel.
With --package: the package's channels and the head (latest bundle) of each.
With --package and --channel: the channel's bundles, by version, and what each replaces.`,
		Example: `  airlock list operators --catalog registry.redhat.io/redhat/redhat-operator-index:v4.18
  airlock list operators --catalog registry.redhat.io/redhat/redhat-operator-index:v4.18 --package odf-operator
  airlock list operators --catalog oci:///srv/catalogs/my-index --package foo --channel stable
  airlock list operators --catalog ./my-catalog/configs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			var done func()
			if o.WorkDir, log, done, err = catalogCache(cmd, o.WorkDir, log); err != nil {
				return err
			}
			defer done()
			if o.Fetch, err = catalogimage.SourceFetchOptions(authFile, tlsVerify, log); err != nil {
				return err
			}
			l, err := pipeline.ListOperators(cmd.Context(), o)
			if err != nil {
				return err
			}
			return l.WriteTable(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Catalog, "catalog", "", "catalog image reference, oci://PATH, or a local file-based catalog directory (required)")
	f.StringVar(&o.Package, "package", "", "list the channels of this package")
	f.StringVar(&o.Channel, "channel", "", "with --package: list the bundles of this channel")
	f.StringVar(&o.WorkDir, "workspace", "", "file://DIR or DIR: a workspace; fetched catalogs are kept in its working-dir/operator-catalogs, as airlock mirror keeps them (default: a temporary folder)")
	f.StringVar(&authFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, the containers auth.json, then ~/.docker/config.json)")
	f.BoolVar(&tlsVerify, "src-tls-verify", true, "verify the registry's TLS certificate (false also allows plain HTTP)")
	addOCMirrorListFlags(cmd, &o)
	return cmd
}
