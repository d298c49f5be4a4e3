package prune_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/prune"
)

// Filter keeps what one operators entry of an ImageSetConfiguration selects:
// here a version range of demo-operator's stable channel and the head of its
// fast channel, as testdata/demo/imageset.yaml asks. The packages it depends on
// come along (demo-database through olm.package.required, demo-monitoring
// through olm.gvk.required), and the explanation says why each bundle stayed.
func ExampleFilter() {
	cat, err := fbc.Load(context.Background(), os.DirFS("../testdata/demo/catalog"), fbc.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	op := imageset.Operator{
		Catalog: "quay.io/airlock-demo/demo-index:v1",
		Packages: []imageset.IncludePackage{{
			Name: "demo-operator",
			Channels: []imageset.IncludeChannel{
				{Name: "stable", IncludeBundle: imageset.IncludeBundle{MinVersion: "1.1.0", MaxVersion: "1.2.1"}},
				{Name: "fast"},
			},
		}},
	}
	kept, why, err := prune.Filter(cat, op, prune.FilterOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range kept.Packages {
		fmt.Printf("%s:", p.Name)
		for _, b := range p.Bundles {
			fmt.Printf(" %s", b.Name)
		}
		fmt.Println()
	}
	for _, p := range why.Packages {
		if p.Dependency {
			fmt.Printf("%s was added as a dependency\n", p.Name)
		}
	}
	// Output:
	// demo-database: demo-database.v1.0.0 demo-database.v2.0.0 demo-database.v2.1.0
	// demo-monitoring: demo-monitoring.v1.0.0
	// demo-operator: demo-operator.v1.1.0 demo-operator.v1.2.0 demo-operator.v1.2.1 demo-operator.v1.4.0
	// demo-database was added as a dependency
	// demo-monitoring was added as a dependency
}
