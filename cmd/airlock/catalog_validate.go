package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

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
	var output, format string
	cmd := &cobra.Command{
		Use:   "validate DIR|INDEX.DB [--format text|json] [-o FILE]",
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
  airlock catalog validate ./configs --format json
  airlock catalog validate ./configs --format json -o report.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, f, err := outputFlag(cmd, output, "file to write", []string{"text", "json"}, true)
			if err != nil {
				return err
			}
			if f != "" {
				format = f
			}
			if format != "text" && format != "json" {
				return fmt.Errorf("invalid --format %q: use text or json", format)
			}
			log, err := logger()
			if err != nil {
				return err
			}
			var out bytes.Buffer // what goes to -o FILE, or standard output
			verdict := validateReport(cmd, args[0], format, log, &out)
			if werr := writeOutput(cmd, path, func(w io.Writer) error { _, err := w.Write(out.Bytes()); return err }); werr != nil {
				return werr
			}
			return verdict
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write the result to (default: standard output)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// validateReport validates dir and writes the result in format to out; the
// error is the exit status (1 invalid, 2 not loaded) with its message.
func validateReport(cmd *cobra.Command, dir, format string, log *slog.Logger, out io.Writer) error {
	counts, err := legacy.ValidateLocal(cmd.Context(), dir, log)
	var verr *validate.ValidationError
	loadFailed := err != nil && !errors.As(err, &verr)
	if format == "json" {
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
}
