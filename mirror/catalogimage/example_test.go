package catalogimage_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/airlock-mirror/airlock/internal/testutil/demoregistry"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
)

// Fetch pins a catalog image to its digest and extracts its file-based
// catalog into a working folder, ready for fbc.LoadDir. The catalog here is
// testdata/demo's, pushed to an embedded registry on 127.0.0.1 (plain HTTP is
// allowed on a loopback address); a real one would be
// "registry.redhat.io/redhat/redhat-operator-index:v4.20".
func ExampleFetch() {
	reg, err := demoregistry.StartDemo() // testdata/demo's catalog as HOST/airlock-demo/demo-index:v1
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	work, err := os.MkdirTemp("", "airlock-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)

	fc, err := catalogimage.Fetch(context.Background(), reg.Catalog, work, catalogimage.FetchOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("catalog folder in the image:", fc.Label)
	fmt.Println("pinned by digest:", fc.Digest.Validate() == nil)
	entries, err := os.ReadDir(fc.ConfigsDir)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	// Output:
	// catalog folder in the image: /configs
	// pinned by digest: true
	// demo-database
	// demo-monitoring
	// demo-operator
}
