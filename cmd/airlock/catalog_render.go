package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/prune/legacy"
)

func init() { registerUnder("catalog", newCatalogRenderCmd) }

func newCatalogRenderCmd() *cobra.Command {
	var output, outDir string
	var permissive bool
	cmd := &cobra.Command{
		Use:   "render DIR|INDEX.DB|MANIFESTS [--output-dir OUT]",
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
SQLite or package manifests.`,
		Example: `  airlock catalog render ./catalog > catalog.json
  airlock catalog render ./catalog -o yaml
  airlock catalog render ./index.db --output-dir ./catalog
  airlock catalog render ./manifests --output-dir ./catalog`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if outDir != "" {
				st, err := legacy.ConvertLocal(cmd.Context(), args[0], outDir, log, permissive)
				if err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "converted %d packages, %d channels, %d bundles to %s\n", st.Packages, st.Channels, st.Bundles, outDir)
				}
				return err
			}
			return legacy.RenderLocal(cmd.Context(), args[0], cmd.OutOrStdout(), output, log)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "json", "output format: json or yaml")
	cmd.Flags().StringVar(&outDir, "output-dir", "", "convert INDEX.DB or MANIFESTS into this file-based catalog folder (must be empty or absent) instead of printing")
	cmd.Flags().BoolVar(&permissive, "permissive", false, "with --output-dir and MANIFESTS: convert what loads, logging what opm's loader would refuse")
	return cmd
}
