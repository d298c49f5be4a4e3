// Command manifests writes a synthetic package-manifest folder for the
// conversion benchmarks (docs/benchmarks.md, "Package-manifest folders"), run
// from the repository's root:
//
//	go run ./internal/gen/manifests -o /tmp/manifests                  # 20 packages × 50 versions
//	go run ./internal/gen/manifests -packages 5 -versions 10 -o DIR
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/airlock-mirror/airlock/internal/gen/manifests/gen"
)

func main() {
	out := flag.String("o", "", "output directory")
	packages := flag.Int("packages", 20, "number of packages")
	versions := flag.Int("versions", 50, "versions (bundles) per package")
	template := flag.String("template", "fbc/legacy/testdata/manifests/demo-operator/0.3.0", "the bundle folder every bundle copies (the demo operator's 0.3.0)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "manifests: -o DIR is required")
		os.Exit(2)
	}
	if err := gen.Write(*out, *template, *packages, *versions); err != nil {
		fmt.Fprintln(os.Stderr, "manifests:", err)
		os.Exit(1)
	}
}
