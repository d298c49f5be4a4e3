package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

func init() { register(newHistoryCmd) }

func newHistoryCmd() *cobra.Command {
	var ws string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history --workspace file://DIR [--json]",
		Short: "List what every run put into (or deleted from) the mirror registry, and why",
		Long: `History lists the runs recorded in a workspace: every mirror-to-mirror and
disk-to-mirror run appends one record (DIR/working-dir/history/run-NNNNNN.json,
never rewritten) with each image it selected, where it went (repository and
digest), which catalog, package and bundle or additionalImages entry wanted it,
the configuration and the time; every executed delete plan appends what it
removed. Text output shows, per run, the images it added to the registry.
--json prints every record.`,
		Example: `  airlock history --workspace file://./mirror-ws
  airlock history --workspace file://./mirror-ws --json | jq '.runs[-1].images | length'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := location.ParseDir("--workspace", ws)
			if err != nil {
				return err
			}
			h, err := pipeline.ReadHistory(l)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(h)
			}
			return h.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "file://DIR: the --workspace of the mirror runs (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the records as JSON")
	_ = cmd.MarkFlagRequired("workspace")
	cmd.AddCommand(newHistoryRetireCmd())
	return cmd
}

func newHistoryRetireCmd() *cobra.Command {
	var ws string
	cmd := &cobra.Command{
		Use:   "retire CONFIG --workspace file://DIR [docker://REGISTRY[:PORT]/NAMESPACE]",
		Short: "Stop counting a configuration file's last run as a current selection",
		Long: `Retire records in the history that the selection of the configuration file CONFIG
(what its latest mirror run selected) is no longer current, at the destination
given or at every destination where it is: delete --generate --stale then plans
the removal of what only that selection wanted. For dated configuration files
(isc-2026-10.yaml, then isc-2026-11.yaml), retire the old one once the new one
has been mirrored. A later mirror run with CONFIG makes it current again. CONFIG
is the path the runs recorded, or its file name when only one recorded path has
it (airlock history lists them).`,
		Example: `  airlock history retire isc-2026-10.yaml --workspace file://./ws
  airlock delete --generate --stale --workspace file://./ws docker://127.0.0.1:5000/mirror`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest := ""
			if len(args) == 2 {
				d, err := location.ParseRegistry("destination", args[1])
				if err != nil {
					return err
				}
				dest = d.Path
			}
			l, err := location.ParseDir("--workspace", ws)
			if err != nil {
				return err
			}
			wd, err := workspace.OpenLocation(l)
			if err != nil {
				return err
			}
			runs, err := workspace.Retire(wd, args[0], dest)
			for _, r := range runs {
				fmt.Fprintf(cmd.OutOrStdout(), "run %d: retired the selection of %s at %s\n", r.Seq, r.ConfigPath, r.Destination)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&ws, "workspace", "", "file://DIR: the --workspace of the mirror runs (required)")
	_ = cmd.MarkFlagRequired("workspace")
	return cmd
}
