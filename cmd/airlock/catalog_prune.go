package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { registerUnder("catalog", newCatalogPruneCmd) }

func newCatalogPruneCmd() *cobra.Command {
	var opts pipeline.PruneOptions
	var explain bool
	cmd := &cobra.Command{
		Use:   "prune -c imageset.yaml [--explain] [-o OUTDIR] [--format json|yaml] SOURCE|INDEX.DB",
		Short: "Prune a file-based catalog directory to what an ImageSetConfiguration asks for",
		Long: `Prune a file-based catalog (FBC) directory to what the mirror.operators entry of an
ImageSetConfiguration asks for, with oc-mirror v2 semantics: heads of every channel by
default, packages, channels, minVersion/maxVersion, full, selected bundles, and
dependencies (olm.package.required, olm.gvk.required) unless skipDependencies is set.

The entry used is the one whose catalog is SOURCE or oci://SOURCE, or the only entry.
The pruned catalog always passes airlock catalog validate. It is written to OUTDIR
(which must be empty or absent); --explain prints every kept bundle and why.
SOURCE may be INDEX.DB, the SQLite database of an old index image, or a
package-manifest folder (<package>/<version>/*.clusterserviceversion.yaml and a
*.package.yaml): it is converted first as opm v1.73 did, then pruned like any
file-based catalog.`,
		Example: `  airlock catalog prune -c imageset.yaml ./catalog -o ./pruned
  airlock catalog prune -c imageset.yaml --explain ./catalog`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			if opts.ConfigPath == "" {
				return fmt.Errorf("no configuration: pass -c imageset.yaml")
			}
			if _, _, err := outputFlag(cmd, opts.OutDir, "folder the pruned catalog is written to", []string{fbc.FormatJSON, fbc.FormatYAML}, false); err != nil {
				return err
			}
			opts.Source = args[0]
			opts.Logger = log
			res, err := pipeline.PruneLocal(cmd.Context(), opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if explain {
				if err := res.Explanation.WriteText(out); err != nil {
					return err
				}
			}
			pkgs, chans, bundles := res.Explanation.Counts()
			if opts.OutDir != "" {
				fmt.Fprintf(out, "kept %d packages, %d channels, %d bundles; written to %s\n", pkgs, chans, bundles, opts.OutDir)
			} else {
				fmt.Fprintf(out, "kept %d packages, %d channels, %d bundles (nothing written: pass -o OUTDIR)\n", pkgs, chans, bundles)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.ConfigPath, "config", "c", "", "ImageSetConfiguration file (required)")
	f.StringVarP(&opts.OutDir, "output", "o", "", "directory to write the pruned catalog to (must be empty or absent)")
	f.StringVar(&opts.Format, "format", fbc.FormatJSON, "output format: json or yaml")
	f.BoolVar(&explain, "explain", false, "print, per package, every kept bundle and why it was kept")
	return cmd
}
