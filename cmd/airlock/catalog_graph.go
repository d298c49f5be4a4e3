package main

import (
	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/prune/graph"
)

func init() { registerUnder("catalog", newCatalogGraphCmd) }

func newCatalogGraphCmd() *cobra.Command {
	var opts graph.DrawOptions
	var configPath, authFile, workDir string
	var tlsVerify bool
	cmd := &cobra.Command{
		Use:   "graph CATALOG --package P [--channel C] [-c imageset.yaml] [-o out.svg|.png|.dot|.mmd]",
		Short: "Draw the upgrade graph of a package of a file-based catalog",
		Long: `Draw the channel upgrade graphs of one package of CATALOG: a file-based catalog
folder, a SQLite index database, a package-manifest folder, or a catalog image
(registry reference or oci://PATH, fetched as airlock mirror does; --workspace keeps
it for the next run). Bundles as nodes ordered by version (oldest on the left), edges in the upgrade
direction: replaces solid, skips dashed orange, skipRange dotted blue (labelled with
the range; a range covering many bundles is drawn to its lowest and highest only).
Channel heads have a thick double border, the default channel a bold frame,
deprecated bundles and channels are red.

With -c, the ImageSetConfiguration's entry for CATALOG is applied as airlock catalog prune
would: kept bundles are green, bundles kept as dependencies blue, pruned ones grey.

Runs of bundles linked only by replaces are folded into one node ("12 bundles
v1.0 … v1.11") so channels with hundreds of entries stay readable (--collapse 0 never
folds). Pictures (SVG) are laid out by Graphviz, built in; the format comes from
the extension of -o (standard output gets DOT, or --format). PNG is that SVG drawn
by a headless Chromium (chromium on the PATH or $AIRLOCK_CHROMIUM; the renderer
bundled with the Graphviz library draws PNG edges wrongly).`,
		Example: `  airlock catalog graph ./catalog --package etcd -o etcd.svg
  airlock catalog graph ./catalog --package etcd --channel stable -c imageset.yaml -o etcd.svg
  airlock catalog graph ./catalog --package etcd --format mmd > etcd.mmd
  airlock catalog graph registry.redhat.io/redhat/redhat-operator-index:v4.18 --package compliance-operator -o co.svg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			opts.Dir, opts.Logger = args[0], log
			if _, _, err := outputFlag(cmd, opts.Output, "file to write (its extension gives the format)", []string{"svg", "png", "dot", "mmd"}, false); err != nil {
				return err
			}
			var done func()
			if workDir, log, done, err = catalogCache(cmd, workDir, log); err != nil {
				return err
			}
			defer done()
			opts.Logger = log
			fetch, err := catalogimage.SourceFetchOptions(authFile, tlsVerify, log)
			if err != nil {
				return err
			}
			return pipeline.GraphDir(cmd.Context(), configPath, opts, fetch, workDir, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Package, "package", "", "package to draw (required)")
	f.StringVar(&opts.Channel, "channel", "", "draw only this channel (default: every channel of the package)")
	f.StringVarP(&configPath, "config", "c", "", "ImageSetConfiguration: colour what it keeps, prunes and pulls in as dependencies")
	f.StringVarP(&opts.Output, "output", "o", "", "file to write: .svg, .png, .dot or .mmd (default: DOT on standard output)")
	f.StringVar(&opts.Format, "format", "", "svg, png, dot or mmd (default: from the extension of -o)")
	f.IntVar(&opts.Collapse, "collapse", graph.DefaultCollapse, "fold runs of at least this many bundles linked only by replaces (0: never)")
	f.StringVar(&workDir, "workspace", "", "file://DIR or DIR: a workspace; fetched catalogs are kept in its working-dir/operator-catalogs, as airlock mirror keeps them (default: a temporary folder)")
	f.StringVar(&authFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, the containers auth.json, then ~/.docker/config.json)")
	f.BoolVar(&tlsVerify, "src-tls-verify", true, "verify the registry's TLS certificate (false also allows plain HTTP)")
	_ = cmd.MarkFlagRequired("package")
	return cmd
}
