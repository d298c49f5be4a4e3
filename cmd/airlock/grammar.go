package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/workspace"
)

// One grammar across commands (docs/from-oc-mirror.md): --workspace is
// file://DIR or DIR everywhere, -o is an output path and --format the format.

// catalogCache turns a catalog command's --workspace (file://DIR or DIR) into
// the catalog cache of that workspace, DIR/working-dir/operator-catalogs, the
// one airlock mirror uses; "" stays "" (a temporary folder). With a workspace
// the command also logs into its run log (working-dir/logs): the logger
// returned writes to log and to that file, and done closes it.
func catalogCache(cmd *cobra.Command, ws string, log *slog.Logger) (cache string, _ *slog.Logger, done func(), _ error) {
	if ws == "" {
		return "", log, func() {}, nil
	}
	l, err := location.ParseDir("--workspace", ws)
	if err != nil {
		return "", nil, nil, err
	}
	d, err := workspace.OpenLocation(l)
	if err != nil {
		return "", nil, nil, err
	}
	var args []string
	cmd.Flags().Visit(func(f *pflag.Flag) { args = append(args, "--"+f.Name+"="+f.Value.String()) })
	log, done = d.OpenRunLog(log, time.Now(), cmd.CommandPath(), "flags", strings.Join(args, " "), "args", strings.Join(cmd.Flags().Args(), " "))
	return d.OperatorCatalogsDir(), log, done, nil
}

// exists reports whether path names something on disk.
func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// outputFlag resolves a command's -o and --format, one rule for every command
// (docs/catalog-io.md#-o-and---format): -o is a path, the file (or catalog
// prune's folder) written. A bare format name given to -o ("-o json", the
// habit of oc and kubectl) is read as --format, with a note, only where that
// cannot mean anything else: the command prints that format (asFormat), --format
// is not given and nothing of that name exists. Otherwise it is refused,
// pointing to --format and to ./NAME for a path of that name: never a file or
// folder silently named after a format. format is "" when -o is a path.
func outputFlag(cmd *cobra.Command, output, what string, formats []string, asFormat bool) (path, format string, err error) {
	if !slices.Contains(formats, output) {
		return output, "", nil
	}
	given := cmd.Flags().Changed("format")
	if asFormat && !given && !exists(output) {
		fmt.Fprintf(cmd.ErrOrStderr(), "airlock: note: -o %s is read as --format %s; -o is the %s (write -o ./%s for one named %s)\n", output, output, what, output, output)
		return "", output, nil
	}
	hint := "--format " + output
	if given {
		hint = "a path"
	}
	why := ""
	if exists(output) {
		why = " (" + output + " exists)"
	}
	return "", "", fmt.Errorf("-o %s: -o is the %s; did you mean %s?%s For one named %s write -o ./%s", output, what, hint, why, output, output)
}

// writeOutput runs write into the file path (atomically), or standard output
// when path is "".
func writeOutput(cmd *cobra.Command, path string, write func(io.Writer) error) error {
	if path == "" {
		return write(cmd.OutOrStdout())
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "written to %s\n", path)
	return nil
}
