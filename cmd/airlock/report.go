package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { register(newReportCmd) }

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Write the HTML report of a mirror run again (working-dir/report.html)",
		Long: `Every airlock mirror run writes working-dir/report.html: one self-contained page
(no script, font or stylesheet from anywhere, so it opens inside the air gap) with the
configuration, per catalog and package what was kept and why with the upgrade graphs,
images and bytes per package and per destination repository, what failed and why,
timings per stage and, for mirror-to-disk, what the archive holds. Every run's own
page stays in working-dir/reports/report-NNNNNN.html; report.html is the last one
(a run refused before it planned anything does not replace it).

airlock report writes the page again from working-dir/report.json. DIR is the run's
file:// destination, its --workspace, or the working-dir itself.`,
		Example: `  airlock report ./mirror        # after airlock mirror -c isc.yaml file://./mirror`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := pipeline.RegenerateReport(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report written to %s\n", path)
			return nil
		},
	}
}
