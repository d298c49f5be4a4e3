package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/release/graph"
)

func init() { registerUnder("list", newListReleasesCmd) }

// newListReleasesCmd is oc-mirror v2's list releases, answered from the
// OpenShift update service, plus a preview of what a mirror.platform channel
// chooses and a picture of the channel's update graph.
func newListReleasesCmd() *cobra.Command {
	var (
		o              graph.ListOptions
		co             graph.ClientOptions
		draw           bool
		output, format string
	)
	cmd := &cobra.Command{
		Use:   "releases (--channel C | --version X.Y | --channels --version X.Y)",
		Short: "List OpenShift update channels and release versions from the update service",
		Long: `List what the OpenShift update service (Cincinnati) offers, to help write the
mirror.platform stanza of an ImageSetConfiguration (oc-mirror v2's list releases).

--channels --version X.Y: the channels the releases of stable-X.Y are in.
--channel C (or --version X.Y for stable-X.Y): the channel's versions, for each
architecture of --filter-by-archs (amd64 by default).

With --min-version, --max-version, --full or --shortest-path: what a
mirror.platform channel with those fields chooses (airlock mirror's rules, see
docs/releases.md), and the risks of conditional updates between the chosen versions.

--graph draws the channel's update graph with the chosen versions and path
highlighted and conditional updates dashed with their risk names (-o FILE: .svg,
.png, .dot or .mmd; standard output gets DOT, or --format).

The service is https://api.openshift.com/api/upgrades_info/v1/graph (OKD's for
--type okd), or --graph-url, or $UPDATE_URL_OVERRIDE.`,
		Example: `  airlock list releases --version 4.18
  airlock list releases --channels --version 4.18
  airlock list releases --channel fast-4.18 --filter-by-archs amd64,arm64
  airlock list releases --channel eus-4.16 --min-version 4.14.40 --max-version 4.16.30 --shortest-path
  airlock list releases --channel stable-4.16 --min-version 4.16.20 --graph -o stable-4.16.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			co.Log = log
			f := graph.NewClient(co)
			if draw {
				path, fmtFromO, err := outputFlag(cmd, output, "file to write (its extension gives the format)", []string{"svg", "png", "dot", "mmd"}, true)
				if err != nil {
					return err
				}
				format = orDefault(format, fmtFromO)
				if format == "" && path != "" {
					if format, err = graph.FormatOf(path); err != nil {
						return err
					}
				}
				pic, err := graph.DrawChannel(cmd.Context(), f, o, graph.DrawOptions{})
				if err != nil {
					return err
				}
				return writeOutput(cmd, path, func(w io.Writer) error {
					return pic.Write(cmd.Context(), w, orDefault(format, graph.FormatDOT))
				})
			}
			l, err := graph.List(cmd.Context(), f, o)
			if l != nil {
				if werr := l.Write(cmd.OutOrStdout()); err == nil {
					err = werr
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Channel, "channel", "", "list the versions of this channel (default: stable-<version>)")
	fl.BoolVar(&o.Channels, "channels", false, "list the channels of --version")
	fl.StringVar(&o.Version, "version", "", "an OpenShift version X.Y")
	fl.StringSliceVar(&o.Archs, "filter-by-archs", []string{graph.DefaultArch}, "architectures: amd64, arm64, ppc64le, s390x, multi")
	fl.StringVar(&o.Type, "type", graph.TypeOCP, "channel type: ocp or okd")
	fl.StringVar(&o.Select.MinVersion, "min-version", "", "preview mirror.platform: the channel's minVersion")
	fl.StringVar(&o.Select.MaxVersion, "max-version", "", "preview mirror.platform: the channel's maxVersion")
	fl.BoolVar(&o.Select.Full, "full", false, "preview mirror.platform: the channel's full")
	fl.BoolVar(&o.Select.ShortestPath, "shortest-path", false, "preview mirror.platform: the channel's shortestPath")
	fl.BoolVar(&o.AllowConditional, "allow-conditional-updates", false, "shortest paths may take conditional updates (recommended only to clusters their risks do not match)")
	fl.StringVar(&co.URL, "graph-url", "", "update service URL (default: $UPDATE_URL_OVERRIDE, else OpenShift's or OKD's service)")
	fl.DurationVar(&co.Timeout, "graph-timeout", graph.DefaultTimeout, "deadline of each request to the update service")
	fl.BoolVar(&draw, "graph", false, "draw the channel's update graph instead of listing (-o FILE or --format)")
	fl.StringVarP(&output, "output", "o", "", "with --graph: file to write: .svg, .png, .dot or .mmd (default: DOT on standard output)")
	fl.StringVar(&format, "format", "", "with --graph: svg, png, dot or mmd (default: from the extension of -o)")
	return cmd
}
