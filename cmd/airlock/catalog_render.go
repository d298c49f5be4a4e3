package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/prune"
)

func init() { registerUnder("catalog", newCatalogRenderCmd) }

func newCatalogRenderCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "render DIR",
		Short: "Print a file-based catalog directory as one JSON or YAML stream",
		Long: `Load the file-based catalog (FBC) rooted at DIR and print it to standard output as
one stream of documents, like "opm render DIR": packages sorted by name, then per
package its olm.package document, its channels and bundles sorted by name, its other
documents and its deprecations; documents that name no package come last.

Every file under DIR is read (JSON streams or YAML multi-document streams, whatever
the extension) except those excluded by .indexignore files. Large inlined manifests
(olm.bundle.object, olm.csv.metadata) are not held in memory: they are copied from
DIR while writing, so DIR must not change while the command runs.`,
		Example: `  airlock catalog render ./catalog > catalog.json
  airlock catalog render ./catalog -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			return prune.RenderDir(cmd.Context(), args[0], cmd.OutOrStdout(), output, log)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "json", "output format: json or yaml")
	return cmd
}
