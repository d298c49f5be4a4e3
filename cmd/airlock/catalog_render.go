package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { registerUnder("catalog", newCatalogRenderCmd) }

func newCatalogRenderCmd() *cobra.Command {
	var output, format, outDir, authFile, workDir string
	var permissive, tlsVerify bool
	cmd := &cobra.Command{
		Use:   "render DIR|INDEX.DB|MANIFESTS|BUNDLE|IMAGE... [--output-dir OUT]",
		Short: "Print a file-based catalog directory (or a SQLite index database, or a package-manifest folder) as one JSON or YAML stream",
		Long: `Load the file-based catalog (FBC) rooted at DIR and print it to standard output as
one stream of documents, like "opm render DIR": packages sorted by name, then per
package its olm.package document, its channels and bundles sorted by name, its other
documents and its deprecations; documents that name no package come last.

Every file under DIR is read (JSON streams or YAML multi-document streams, whatever
the extension) except those excluded by .indexignore files. Large inlined manifests
(olm.bundle.object, olm.csv.metadata) are not held in memory: they are copied from
DIR while writing, so DIR must not change while the command runs.

INDEX.DB is the SQLite database of an old index image (opm index add; the file at
/database/index.db): it is converted as opm v1.73's "opm render"/"opm migrate" did.

MANIFESTS is a package-manifest folder (<package>/<version>/*.clusterserviceversion.yaml
with the bundle's CRDs, and a *.package.yaml naming the channels and the default
channel), recognised by its CSV files: it is converted as opm v1.73 did (its
directory loader, then "opm migrate"); bundles have no image, their manifests are
inlined as olm.bundle.object properties. Anything opm's loader reports is an error
unless --permissive.

With --output-dir the converted catalog is written as a file-based catalog folder
(one <package>/catalog.json per package, like "opm migrate") to move a site off
SQLite or package manifests.

BUNDLE is an unpacked bundle (a folder with manifests/ and metadata/annotations.yaml)
and IMAGE a bundle image (registry reference or oci://PATH): each renders to one
olm.bundle as "opm render" of opm v1.73 does (the image as given is its image). An
IMAGE that is not a bundle image is rendered as a catalog image. Several sources
give one stream, in order: render the bundles of a package after its olm.package and
olm.channel documents to build a catalog, or use "airlock catalog add".`,
		Example: `  airlock catalog render ./catalog > catalog.json
  airlock catalog render ./catalog --format yaml -o catalog.yaml
  airlock catalog render ./index.db --output-dir ./catalog
  airlock catalog render ./manifests --output-dir ./catalog
  airlock catalog render quay.io/acme/widget-bundle:v1.2.0 ./unpacked-bundle`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if outDir != "" {
				if len(args) != 1 {
					return fmt.Errorf("--output-dir converts one INDEX.DB or MANIFESTS folder; %d sources given", len(args))
				}
				st, err := legacy.ConvertLocal(cmd.Context(), args[0], outDir, log, permissive)
				if err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "converted %d packages, %d channels, %d bundles to %s\n", st.Packages, st.Channels, st.Bundles, outDir)
				}
				return err
			}
			var done func()
			if workDir, log, done, err = catalogCache(cmd, workDir, log); err != nil {
				return err
			}
			defer done()
			fetch, err := catalogimage.SourceFetchOptions(authFile, tlsVerify, log)
			if err != nil {
				return err
			}
			path, fmtOut, err := outputFlag(cmd, output, "file to write", []string{fbc.FormatJSON, fbc.FormatYAML}, true)
			if err != nil {
				return err
			}
			if fmtOut == "" {
				fmtOut = format
			}
			return writeOutput(cmd, path, func(w io.Writer) error {
				return pipeline.Render(cmd.Context(), pipeline.RenderOptions{
					Sources: args, Format: fmtOut, WorkDir: workDir, Fetch: fetch,
				}, w)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write the catalog to (default: standard output)")
	cmd.Flags().StringVar(&format, "format", "json", "output format: json or yaml")
	cmd.Flags().StringVar(&outDir, "output-dir", "", "convert INDEX.DB or MANIFESTS into this file-based catalog folder (must be empty or absent) instead of printing")
	cmd.Flags().StringVar(&workDir, "workspace", "", "file://DIR or DIR: a workspace; fetched catalogs are kept in its working-dir/operator-catalogs, as airlock mirror keeps them (default: a temporary folder)")
	cmd.Flags().StringVar(&authFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, the containers auth.json, then ~/.docker/config.json)")
	cmd.Flags().BoolVar(&tlsVerify, "src-tls-verify", true, "verify the registry's TLS certificate (false also allows plain HTTP)")
	cmd.Flags().BoolVar(&permissive, "permissive", false, "with --output-dir and MANIFESTS: convert what loads, logging what opm's loader would refuse")
	return cmd
}
