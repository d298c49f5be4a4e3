package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

func init() { registerUnder("catalog", newCatalogValidateCmd) }

// catalogValidateResult is the --output json document.
type catalogValidateResult struct {
	Dir      string             `json:"dir"`
	Valid    bool               `json:"valid"`
	Counts   *fbc.CatalogCounts `json:"counts,omitempty"`
	Problems []validate.Problem `json:"problems,omitempty"`
	Error    string             `json:"error,omitempty"`
}

func newCatalogValidateCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "validate DIR|INDEX.DB",
		Short: "Check a file-based catalog against every rule of opm validate (and opm serve)",
		Long: `Validate loads the file-based catalog rooted at DIR and checks it against every
rule of the newest "opm validate" (package, channel, bundle and deprecation rules,
the channel upgrade graph, skipRange syntax, image references, unique versions,
release names) plus the checks "opm serve" makes when it builds its cache (custom
schema names, at most one olm.csv.metadata per bundle).

All problems are reported, one per line, naming the package, channel and bundle,
with opm's wording. Exit status: 0 valid, 1 invalid, 2 the catalog could not be
loaded (the message names the file and document). INDEX.DB, the SQLite database of
an old index image, and a package-manifest folder (recognised by its
*.clusterserviceversion.yaml files) are converted first as opm v1.73 did.`,
		Example: `  airlock catalog validate ./configs
  airlock catalog validate ./configs -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("invalid --output %q: use text or json", output)
			}
			log, err := logger()
			if err != nil {
				return err
			}
			dir := args[0]
			counts, err := legacy.ValidateLocal(cmd.Context(), dir, log)
			var verr *validate.ValidationError
			loadFailed := err != nil && !errors.As(err, &verr)
			out := cmd.OutOrStdout()

			if output == "json" {
				res := catalogValidateResult{Dir: dir, Valid: err == nil}
				if !loadFailed {
					res.Counts = &counts
				}
				if verr != nil {
					res.Problems = verr.Problems
				} else if err != nil {
					res.Error = err.Error()
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if encErr := enc.Encode(res); encErr != nil {
					return encErr
				}
				switch {
				case loadFailed:
					return &exitError{code: 2}
				case err != nil:
					return &exitError{code: 1}
				}
				return nil
			}

			switch {
			case loadFailed:
				return &exitError{code: 2, msg: fmt.Sprintf("cannot load catalog %s: %v", dir, err)}
			case err != nil:
				for _, p := range verr.Problems {
					fmt.Fprintln(out, p.String())
				}
				return &exitError{code: 1, msg: fmt.Sprintf("%s: invalid catalog: %d problem(s) (%d packages, %d channels, %d bundles)",
					dir, len(verr.Problems), counts.Packages, counts.Channels, counts.Bundles)}
			}
			fmt.Fprintf(out, "%s: valid (%d packages, %d channels, %d bundles)\n", dir, counts.Packages, counts.Channels, counts.Bundles)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
