package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/workspace"
)

// One grammar across commands (docs/from-oc-mirror.md): --workspace is
// file://DIR or DIR everywhere, -o is an output path and --format the format.

// catalogCache turns a catalog command's --workspace (file://DIR or DIR) into
// the catalog cache of that workspace, DIR/working-dir/operator-catalogs, the
// one airlock mirror uses; "" stays "" (a temporary folder).
func catalogCache(location string) (string, error) {
	if location == "" {
		return "", nil
	}
	d, err := workspace.OpenLocation(location)
	if err != nil {
		return "", err
	}
	return d.OperatorCatalogsDir(), nil
}

// isFormatWord reports whether an -o value is a format name rather than a path.
func isFormatWord(s string) bool { return s == "json" || s == "yaml" }

// exists reports whether path names something on disk.
func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// renderOutput resolves catalog render's -o and --format. -o is an output file;
// "-o json" and "-o yaml" (the format, before -o was a path) still choose the
// format, with a note, when that is unambiguous: --format not given and no
// file of that name.
func renderOutput(cmd *cobra.Command, output, format string) (path, fmtOut string) {
	if isFormatWord(output) && !cmd.Flags().Changed("format") && !exists(output) {
		fmt.Fprintf(cmd.ErrOrStderr(), "airlock: note: -o %s is read as --format %s; -o is an output file (write -o ./%s for a file named %s)\n", output, output, output, output)
		return "", output
	}
	return output, format
}

// pruneOutput refuses catalog prune's "-o json" or "-o yaml" when no folder of
// that name exists: it would silently create one where the user meant a format.
func pruneOutput(output string, formatGiven bool) error {
	if isFormatWord(output) && !exists(output) {
		hint := "--format " + output
		if formatGiven {
			hint = "a folder path"
		}
		return fmt.Errorf("-o %s: -o is the folder the pruned catalog is written to; did you mean %s? (for a folder named %s write -o ./%s)", output, hint, output, output)
	}
	return nil
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
