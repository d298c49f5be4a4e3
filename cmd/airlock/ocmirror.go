package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// oc-mirror v2's flags that airlock accepts so that oc-mirror command lines run
// unchanged (docs/from-oc-mirror.md lists every flag). A flag that cannot apply
// is accepted and its note printed once, on stderr, when it is given.

// ocNote is an accepted oc-mirror flag that has no effect, and why.
type ocNote struct{ flag, why string }

// addOCMirrorGlobals adds --v2 and --v1 to every command and -v/--version to
// the root.
func addOCMirrorGlobals(root *cobra.Command) {
	root.Version = Version()
	root.SetVersionTemplate("airlock {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.Bool("v2", false, "accepted for oc-mirror v2 command lines: airlock is a v2 engine (no effect)")
	pf.Bool("v1", false, "oc-mirror's v1 engine: not provided (airlock implements oc-mirror v2's workflows)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if v1, _ := cmd.Flags().GetBool("v1"); v1 {
			return errors.New("--v1: airlock has no oc-mirror v1 engine; it runs oc-mirror v2's workflows (use --v2 or no flag): docs/from-oc-mirror.md")
		}
		return nil
	}
}

// addOCMirrorMirrorFlags adds oc-mirror v2's mirror flags airlock did not have.
func addOCMirrorMirrorFlags(cmd *cobra.Command, o *pipeline.Options) {
	var since, cacheDir string
	f := cmd.Flags()
	f.StringVar(&since, "since", "", "mirror-to-disk: YYYY-MM-DD: ship what changed since that date (the next batch builds only on the batches written before it)")
	f.StringVar(&cacheDir, "cache-dir", "", "base folder of the catalog cache shared across workspaces (CACHE/"+workspace.CacheDirName+"; default: $"+workspace.CacheEnv+", else each working-dir)")
	f.BoolVar(&o.Archive.SkipSpaceCheck, "skip-space-check", false, "mirror-to-disk: go on when the archive's filesystem has less free space than the blobs still to fetch (checked before anything is staged)")
	f.BoolVar(&o.Archive.Strict, "strict-archive", false, "mirror-to-disk: fail when a blob is larger than archiveSize (default: it gets an archive file of its own)")
	notes := []ocNote{
		{"port", "airlock needs no local cache registry: images go straight from the source to the destination or archive"},
		{"dry-run-manifest-lists", "airlock's dry-run mapping already names each image by the digest of its manifest list or manifest"},
		{"rootless-storage-path", "airlock uses no containers-storage"},
	}
	f.IntP("port", "p", 55000, noteUsage(notes[0]))
	f.Bool("dry-run-manifest-lists", false, noteUsage(notes[1]))
	f.String("rootless-storage-path", "", noteUsage(notes[2]))
	chainPreRun(cmd, func(cmd *cobra.Command) error {
		printNotes(cmd, notes)
		if since != "" {
			t, err := parseSince(since)
			if err != nil {
				return err
			}
			o.Archive.Since = t
		}
		dir, err := workspace.ResolveCacheDir(cacheDir)
		o.CacheDir = dir
		return err
	})
}

// addOCMirrorDeleteFlags adds oc-mirror v2's delete flags airlock did not have.
func addOCMirrorDeleteFlags(cmd *cobra.Command, o *deletion.Options) {
	notes := []ocNote{
		{"force-cache-delete", "airlock keeps no local cache registry: the images are deleted from the destination only, and there is nothing else to delete"},
		{"delete-v1-images", "airlock mirrors with oc-mirror v2's tags only; images oc-mirror v1 mirrored are not in airlock's history"},
		{"delete-signatures", "airlock delete always plans an image's signatures and other attachments with the image"},
	}
	f := cmd.Flags()
	f.Bool("force-cache-delete", false, noteUsage(notes[0]))
	// oc-mirror's documentation writes "--force-cache-delete true": a boolean
	// flag takes no separate value, so "true" arrives as an argument before the
	// destination. It is accepted there (and only there).
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 2 && (args[0] == "true" || args[0] == "false") && cmd.Flags().Changed("force-cache-delete") {
			return nil
		}
		return oneDestination(cmd, args)
	}
	f.Bool("delete-v1-images", false, noteUsage(notes[1]))
	f.Bool("delete-signatures", false, noteUsage(notes[2]))
	f.StringVar(&o.DeleteID, "delete-id", "", "with --generate: write the plan as working-dir/delete/delete-images-ID.yaml (oc-mirror's name)")
	chainPreRun(cmd, func(cmd *cobra.Command) error {
		printNotes(cmd, notes)
		return nil
	})
}

func noteUsage(n ocNote) string { return "oc-mirror flag, accepted: no effect (" + n.why + ")" }

// printNotes prints the note of each accepted flag given on the command line.
func printNotes(cmd *cobra.Command, notes []ocNote) {
	for _, n := range notes {
		if cmd.Flags().Changed(n.flag) {
			fmt.Fprintf(cmd.ErrOrStderr(), "airlock: note: --%s has no effect: %s\n", n.flag, n.why)
		}
	}
}

// chainPreRun runs f before the command's own PreRunE, if any.
func chainPreRun(cmd *cobra.Command, f func(*cobra.Command) error) {
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if err := f(c); err != nil {
			return err
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// parseSince reads --since: oc-mirror's YYYY-MM-DD (UTC midnight), or an RFC 3339 time.
func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a date YYYY-MM-DD (as oc-mirror), e.g. --since 2026-10-01, or an RFC 3339 time", s)
}

// addOCMirrorListFlags adds oc-mirror's list operators --catalogs --version
// (the catalogs Red Hat publishes for an OpenShift version), which airlock
// cannot answer, and makes --catalog required.
func addOCMirrorListFlags(cmd *cobra.Command, o *pipeline.ListOperatorsOptions) {
	var catalogs bool
	var version string
	f := cmd.Flags()
	f.BoolVar(&catalogs, "catalogs", false, "oc-mirror: list the catalogs of an OpenShift --version: not provided (name the catalog with --catalog)")
	f.StringVar(&version, "version", "", "oc-mirror: the OpenShift version of --catalogs: not provided")
	chainPreRun(cmd, func(cmd *cobra.Command) error {
		switch {
		case catalogs || version != "":
			return fmt.Errorf("--catalogs/--version: airlock does not know which catalogs Red Hat publishes for an OpenShift version; name one with --catalog, e.g. --catalog registry.redhat.io/redhat/redhat-operator-index:v%s", orDefault(version, "4.18"))
		case o.Catalog == "":
			return errors.New(`required flag(s) "catalog" not set: --catalog REF (a catalog image, oci://PATH or a file-based catalog folder)`)
		}
		return nil
	})
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// MirrorArgs turns an oc-mirror command line into airlock's: oc-mirror
// mirrors without a subcommand ("oc-mirror -c isc.yaml file://DIR --v2"), so
// when the first word that is not a global flag is a flag of mirror or a
// destination, "mirror" is inserted. Any other command line is unchanged.
func MirrorArgs(root *cobra.Command, args []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--v2" || a == "--v1" || strings.HasPrefix(a, "--log-level="):
			continue
		case a == "--log-level":
			i++
			continue
		case a == "-h" || a == "--help" || a == "-v" || a == "--version":
			return args
		case strings.HasPrefix(a, "-") || strings.Contains(a, "://"):
			if c, _, err := root.Find([]string{"mirror"}); err == nil && c != root {
				return append([]string{"mirror"}, args...)
			}
		}
		return args // a command (or nothing airlock knows)
	}
	return args
}

// oneDestination accepts exactly one argument, the destination, and says so
// with an example when it is missing or there are more.
func oneDestination(cmd *cobra.Command, args []string) error {
	example := "airlock mirror -c isc.yaml docker://registry.example.com:5000/mirror   (a registry)\n  airlock mirror -c isc.yaml file:///media/usb                         (an archive, mirror-to-disk)"
	if cmd.Name() == "delete" {
		example = "airlock delete --generate -c delete-isc.yaml --workspace file://DIR docker://registry.example.com:5000/mirror\n  airlock delete --delete-yaml-file DIR/working-dir/delete/delete-images.yaml docker://registry.example.com:5000/mirror"
	}
	switch {
	case len(args) == 0:
		return fmt.Errorf("no destination given: name the registry (or, for mirror, the archive folder), e.g.\n  %s", example)
	case len(args) > 1:
		return fmt.Errorf("one destination expected, %d given (%s), e.g.\n  %s", len(args), strings.Join(args, " "), example)
	}
	return nil
}
