// Command catalog generates a synthetic file-based catalog for benchmarks:
//
//	go run ./internal/gen/catalog -preset large -o /tmp/catalog
//	go run ./internal/gen/catalog -packages 50 -bundles-per-package 20 -related 5 -object-kb 16 -seed 7 -o DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/airlock-mirror/airlock/internal/gen/catalog/gen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		preset = flag.String("preset", "", "small (20x10) or large (300x25, about 1 GB); other flags override it")
		o      gen.Options
		out    = flag.String("o", "", "output directory (new or empty)")
	)
	flag.IntVar(&o.Packages, "packages", 0, "number of packages")
	flag.IntVar(&o.BundlesPerPackage, "bundles-per-package", 0, "bundles per package")
	flag.IntVar(&o.Related, "related", 0, "relatedImages per bundle, bundle image included")
	flag.IntVar(&o.ObjectKB, "object-kb", -1, "KiB of base64 per olm.bundle.object property (0: none)")
	flag.IntVar(&o.Objects, "objects", 0, "olm.bundle.object properties per bundle (default 3)")
	var seed uint64
	flag.Uint64Var(&seed, "seed", 0, "random seed")
	flag.StringVar(&o.Format, "format", "json", "json or yaml")
	flag.Parse()
	if *out == "" {
		return fmt.Errorf("-o DIR is required")
	}
	opts := gen.Options{Packages: 10, BundlesPerPackage: 10, Related: 4, ObjectKB: 4, Objects: 3, Seed: 1}
	if *preset != "" {
		p, err := gen.Preset(*preset)
		if err != nil {
			return err
		}
		opts = p
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["packages"] {
		opts.Packages = o.Packages
	}
	if set["bundles-per-package"] {
		opts.BundlesPerPackage = o.BundlesPerPackage
	}
	if set["related"] {
		opts.Related = o.Related
	}
	if set["object-kb"] {
		opts.ObjectKB = o.ObjectKB
	}
	if set["objects"] {
		opts.Objects = o.Objects
	}
	if set["seed"] {
		opts.Seed = seed
	}
	opts.Format = o.Format
	return gen.Generate(context.Background(), opts, *out)
}
