package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/internal/registryserver"
	"github.com/airlock-mirror/airlock/internal/seed"
)

func init() {
	registerUnder("registry", newRegistryServeCmd)
	registerUnder("registry", newRegistrySeedCmd)
	registerUnder("registry", newRegistryGCCmd)
}

func newRegistryGCCmd() *cobra.Command {
	var root string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "gc --root DIR [--dry-run]",
		Short: "Free the space of deleted images in an airlock registry serve storage",
		Long: `GC runs the CNCF Distribution garbage collector (mark and sweep, the code of
"registry garbage-collect") over the storage of airlock registry serve: every blob
that no manifest of any repository references any more (after airlock delete) is
removed, and the bytes freed are reported. --dry-run only reports.

Stop airlock registry serve first: a push during the sweep can lose the blobs it
has just uploaded (gc refuses while the registry serving that storage answers).`,
		Example: `  airlock registry gc --root /var/lib/airlock-registry --dry-run
  airlock registry gc --root /var/lib/airlock-registry`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := registryserver.GarbageCollect(cmd.Context(), root, dryRun)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			verb := "freed"
			if dryRun {
				verb = "would free"
			}
			fmt.Fprintf(out, "%s: %d blobs (%s) before; %s %s in %d unreferenced blobs (%d layer links); %d blobs (%s) remain\n",
				root, res.BlobsBefore, humanize.Bytes(res.BytesBefore), verb, humanize.Bytes(res.BytesFreed), res.BlobsDeleted, res.LayerLinks,
				res.BlobsBefore-res.BlobsDeleted, humanize.Bytes(res.BytesBefore-res.BytesFreed))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&root, "root", "", "the --root of airlock registry serve (required)")
	f.BoolVar(&dryRun, "dry-run", false, "report what would be freed, remove nothing")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	_ = cmd.MarkFlagRequired("root")
	return cmd
}

func newRegistryServeCmd() *cobra.Command {
	cfg := registryserver.Config{}
	cmd := &cobra.Command{
		Use:   "serve --root DIR [--addr HOST:PORT]",
		Short: "Run an embedded container registry in the foreground",
		Long: `Serve runs a container registry (the CNCF distribution code, the same as the
"registry" container image) in the foreground, storing everything under --root. It
is a quick mirror registry for a lab, a test or a disconnected site, and the source
and mirror of "make demo".

It prints the URL it listens on once it is ready (with --addr 127.0.0.1:0 the
system picks a free port) and stops cleanly on Ctrl-C or SIGTERM: in-flight requests
get 5 seconds to finish.

--tls-cert and --tls-key serve HTTPS. --htpasswd requires HTTP basic
authentication against an htpasswd file of bcrypt entries (htpasswd -B -c FILE USER).
Binding a non-loopback address without TLS and authentication is allowed but
logs a warning: anyone who can reach it can read and write images.
--log-level debug logs every request.`,
		Example: `  airlock registry serve --root /var/lib/airlock-registry
  airlock registry serve --root ./reg --addr 127.0.0.1:0
  airlock registry serve --root /srv/reg --addr 0.0.0.0:5443 \
      --tls-cert reg.crt --tls-key reg.key --htpasswd /etc/airlock/htpasswd`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
				return errors.New("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither")
			}
			log, err := logger()
			if err != nil {
				return err
			}
			cfg.Logger = log
			out := cmd.OutOrStdout()
			cfg.Ready = func(url string) {
				fmt.Fprintf(out, "airlock registry listening on %s (storage %s); stop it with Ctrl-C\n", url, cfg.RootDir)
			}
			srv, err := registryserver.NewServer(cfg)
			if err != nil {
				return err
			}
			if err := srv.Serve(cmd.Context()); err != nil {
				return fmt.Errorf("registry: %w", err)
			}
			fmt.Fprintln(out, "airlock registry stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.RootDir, "root", "", "storage directory (created if missing; required)")
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:5000", "listen address HOST:PORT (port 0 picks a free one)")
	f.StringVar(&cfg.TLSCertFile, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS (with --tls-key)")
	f.StringVar(&cfg.TLSKeyFile, "tls-key", "", "PEM private key file of --tls-cert")
	f.StringVar(&cfg.Htpasswd, "htpasswd", "", "htpasswd file of bcrypt entries (htpasswd -B): require basic authentication")
	_ = cmd.MarkFlagRequired("root")
	return cmd
}

func newRegistrySeedCmd() *cobra.Command {
	var o seed.RunOptions
	cmd := &cobra.Command{
		Use:   "seed --registry HOST:PORT --catalog-dir DIR --catalog-repo REPO",
		Short: "Fill a registry with a catalog and a small stand-in image for every image it names",
		Long: `Seed pushes to --registry a small deterministic image for every bundle image and
related image the file-based catalog in --catalog-dir names, under the same
repository path and tag (quay.io/acme/op@sha256:... becomes
HOST:PORT/acme/op@sha256:<new digest>), rewrites the catalog to point at them, and
pushes it as a catalog image HOST:PORT/REPO:TAG built like "opm generate
dockerfile" does. --image pushes a stand-in for extra references too (the
additionalImages of an ImageSetConfiguration).

With it, airlock runs end to end with no internet: "make demo" seeds its source
registry this way. Seeding is idempotent: the same inputs give the same digests
and what the registry already has is not sent again.`,
		Example: `  airlock registry seed --registry 127.0.0.1:5000 --catalog-dir testdata/demo/catalog \
      --catalog-repo airlock-demo/demo-index --dest-tls-verify=false
  airlock registry seed --registry 127.0.0.1:5000 --dest-tls-verify=false \
      --image registry.example.com/tools/support-tools:1.4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			o.Logger = log
			res, err := seed.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if c := res.Catalog; c != nil {
				fmt.Fprintf(out, "catalog %s@%s (%d images; rewritten catalog in %s)\n", c.Catalog, c.CatalogDigest, len(c.Images), c.CatalogDir)
			}
			for _, src := range o.Images {
				fmt.Fprintf(out, "image %s -> %s\n", src, res.Images[src])
			}
			fmt.Fprintf(out, "seeded %d images to %s\n", res.Count(), o.Registry)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Registry, "registry", "", "registry to seed, HOST:PORT (required)")
	f.StringVar(&o.CatalogDir, "catalog-dir", "", "file-based catalog directory to seed")
	f.StringVar(&o.CatalogRepo, "catalog-repo", "", "repository of the catalog image, e.g. airlock-demo/demo-index")
	f.StringVar(&o.CatalogTag, "catalog-tag", "v1", "tag of the catalog image")
	f.StringSliceVar(&o.CatalogPlatforms, "catalog-platforms", nil, "make the catalog a multi-arch index of these platforms, e.g. linux/amd64,linux/arm64")
	f.IntVar(&o.MultiArchEvery, "multi-arch-every", 0, "make about one image in N a two-platform index (0: none)")
	f.StringArrayVar(&o.Images, "image", nil, "also push a stand-in for this reference (repeatable)")
	f.StringVar(&o.WorkDir, "work-dir", "", "directory for the rewritten catalog (default: a new temporary directory)")
	f.StringVar(&o.AuthFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, containers auth.json, ~/.docker/config.json)")
	tlsVerifyFlag(f, &o.Insecure, "dest-tls-verify", "verify the registry's TLS certificate (false also allows plain HTTP)")
	_ = cmd.MarkFlagRequired("registry")
	return cmd
}
