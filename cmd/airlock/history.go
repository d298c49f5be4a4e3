package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { register(newHistoryCmd) }

func newHistoryCmd() *cobra.Command {
	var workspace string
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
			h, err := pipeline.ReadHistory(workspace)
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
	cmd.Flags().StringVar(&workspace, "workspace", "", "file://DIR: the --workspace of the mirror runs (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the records as JSON")
	_ = cmd.MarkFlagRequired("workspace")
	return cmd
}
