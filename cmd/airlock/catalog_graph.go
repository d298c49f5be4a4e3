package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/prune/graph"
)

func init() { registerUnder("catalog", newCatalogGraphCmd) }

func newCatalogGraphCmd() *cobra.Command {
	var opts graph.DrawOptions
	var configPath string
	cmd := &cobra.Command{
		Use:   "graph DIR --package P [--channel C] [-c imageset.yaml] [-o out.svg|.dot|.mmd]",
		Short: "Draw the upgrade graph of a package of a file-based catalog",
		Long: `Draw the channel upgrade graphs of one package of the file-based catalog rooted at
DIR: bundles as nodes ordered by version (oldest on the left), edges in the upgrade
direction: replaces solid, skips dashed orange, skipRange dotted blue (labelled with
the range; a range covering many bundles is drawn to its lowest and highest only).
Channel heads have a thick double border, the default channel a bold frame,
deprecated bundles and channels are red.

With -c, the ImageSetConfiguration's entry for DIR is applied as airlock catalog prune
would: kept bundles are green, bundles kept as dependencies blue, pruned ones grey.

Runs of bundles linked only by replaces are folded into one node ("12 bundles
v1.0 … v1.11") so channels with hundreds of entries stay readable (--collapse 0 never
folds). Pictures (SVG) are laid out by Graphviz, built in; the format comes from
the extension of -o (standard output gets DOT, or --format). PNG is not offered:
the renderer bundled with the Graphviz library draws edges wrongly.`,
		Example: `  airlock catalog graph ./catalog --package etcd -o etcd.svg
  airlock catalog graph ./catalog --package etcd --channel stable -c imageset.yaml -o etcd.svg
  airlock catalog graph ./catalog --package etcd --format mmd > etcd.mmd`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			opts.Dir, opts.Logger = args[0], log
			return pipeline.GraphDir(cmd.Context(), configPath, opts, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Package, "package", "", "package to draw (required)")
	f.StringVar(&opts.Channel, "channel", "", "draw only this channel (default: every channel of the package)")
	f.StringVarP(&configPath, "config", "c", "", "ImageSetConfiguration: colour what it keeps, prunes and pulls in as dependencies")
	f.StringVarP(&opts.Output, "output", "o", "", "file to write: .svg, .dot or .mmd (default: DOT on standard output)")
	f.StringVar(&opts.Format, "format", "", "svg, dot or mmd (default: from the extension of -o)")
	f.IntVar(&opts.Collapse, "collapse", graph.DefaultCollapse, "fold runs of at least this many bundles linked only by replaces (0: never)")
	_ = cmd.MarkFlagRequired("package")
	return cmd
}
