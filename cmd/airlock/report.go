package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { register(newReportCmd) }

func newReportCmd() *cobra.Command {
	var ws string
	cmd := &cobra.Command{
		Use:   "report [--workspace] file://DIR|DIR",
		Short: "Write the HTML report of a mirror run again (working-dir/report.html)",
		Long: `Every airlock mirror run writes working-dir/report.html: one self-contained page
(no script, font or stylesheet from anywhere, so it opens inside the air gap) with the
configuration, per catalog and package what was kept and why with the upgrade graphs,
images and bytes per package and per destination repository, what failed and why,
timings per stage and, for mirror-to-disk, what the archive holds. Every run's own
page stays in working-dir/reports/report-NNNNNN.html; report.html is the last one
(a run refused before it planned anything does not replace it).

airlock report writes the page again from working-dir/report.json. DIR is the run's
file:// destination, its --workspace, or the working-dir itself, written file://DIR
or DIR, as an argument or as --workspace.`,
		Example: `  airlock report file://./mirror     # after airlock mirror -c isc.yaml file://./mirror
  airlock report --workspace file://./ws   # after airlock mirror -c isc.yaml --workspace file://./ws docker://…`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && ws != "" {
				return fmt.Errorf("give the folder once: as an argument or as --workspace")
			}
			if len(args) == 1 {
				ws = args[0]
			}
			if ws == "" {
				return fmt.Errorf("which run? give its folder: airlock report file://DIR (its file:// destination or --workspace)")
			}
			dir, err := location.ParseDir("report folder", ws)
			if err != nil {
				return err
			}
			path, err := pipeline.RegenerateReport(dir.Path)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report written to %s\n", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "file://DIR or DIR: the run's workspace (or file:// destination)")
	return cmd
}
