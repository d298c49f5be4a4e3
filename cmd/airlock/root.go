package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// subcommands are registered by the init functions of the files of this package,
// so that each command lives in its own file.
var subcommands []func() *cobra.Command

func register(f func() *cobra.Command) { subcommands = append(subcommands, f) }

// groups are parent commands whose children live in their own files and register
// with registerUnder. Add a group here before registering under it.
var groups = []struct{ name, short string }{
	{"catalog", "Render, validate and prune file-based catalogs"},
	{"archive", "Inspect and verify mirror-to-disk archives"},
	{"registry", "Run and seed an embedded container registry"},
	{"list", "Discover what catalogs hold"},
	{"kube", "Run a sharded mirror as a Kubernetes Indexed Job"},
}

var groupChildren = map[string][]func() *cobra.Command{}

// registerUnder adds the command f builds under the group parent (see groups).
func registerUnder(parent string, f func() *cobra.Command) {
	groupChildren[parent] = append(groupChildren[parent], f)
}

// globalFlags are shared by every command.
type globalFlags struct {
	logLevel string
}

var globals globalFlags

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "airlock",
		Short: "Mirror OLM operator catalogs and images into disconnected clusters",
		Long: `airlock mirrors OLM operator catalogs and container images into disconnected
(air-gapped) Kubernetes and OpenShift clusters.

One declarative ImageSetConfiguration (mirror.openshift.io/v2alpha1, the oc-mirror v2
format) names the operator catalogs, packages, channels and version ranges, additional
images and blocked images. airlock renders and prunes each catalog, resolves every image
to a digest, copies everything (mirror-to-mirror, mirror-to-disk, disk-to-mirror) and
writes the cluster resources (CatalogSource, IDMS, ITMS, ICSP, ClusterCatalog).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&globals.logLevel, "log-level", "info", "log level: debug, info, warn or error (oc-mirror's trace is debug)")
	addOCMirrorGlobals(root)
	root.AddCommand(newVersionCmd())
	for _, f := range subcommands {
		root.AddCommand(f())
	}
	for _, g := range groups {
		children := groupChildren[g.name]
		if len(children) == 0 {
			continue
		}
		parent := &cobra.Command{Use: g.name, Short: g.short, Args: cobra.NoArgs}
		for _, f := range children {
			parent.AddCommand(f())
		}
		root.AddCommand(parent)
	}
	return root
}

// logger returns the logger for the configured --log-level, writing to stderr.
func logger() (*slog.Logger, error) {
	var lvl slog.Level
	switch strings.ToLower(globals.logLevel) {
	case "debug", "trace":
		lvl = slog.LevelDebug
	case "info", "":
		lvl = slog.LevelInfo
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		return nil, fmt.Errorf("invalid --log-level %q: use debug, info, warn or error", globals.logLevel)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// Version returns airlock's version: the -ldflags value, else the module version.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print airlock's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "airlock %s (%s, %s/%s)\n", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
