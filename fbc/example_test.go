package fbc_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/airlock-mirror/airlock/fbc"
)

// Load reads a file-based catalog from any fs.FS (here the demo catalog of
// testdata/demo: one folder per package, YAML documents); packages come out
// sorted by name, their channels and bundles too.
func ExampleLoad() {
	cat, err := fbc.Load(context.Background(), os.DirFS("../testdata/demo/catalog"), fbc.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range cat.Packages {
		fmt.Printf("%s (default channel %s): %d channels, %d bundles\n", p.Name, p.DefaultChannel, len(p.Channels), len(p.Bundles))
		for _, ch := range p.Channels {
			fmt.Printf("  %s: %d entries\n", ch.Name, len(ch.Entries))
		}
	}
	// Output:
	// demo-database (default channel stable): 2 channels, 4 bundles
	//   preview: 1 entries
	//   stable: 3 entries
	// demo-monitoring (default channel stable): 1 channels, 2 bundles
	//   stable: 2 entries
	// demo-operator (default channel stable): 2 channels, 7 bundles
	//   fast: 4 entries
	//   stable: 4 entries
}
