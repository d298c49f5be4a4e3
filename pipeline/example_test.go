package pipeline_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/airlock-mirror/airlock/internal/testutil/demoregistry"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// Mirror runs one mirror command; with a docker:// Destination and a Workspace
// it is mirror-to-mirror. Here the source is an embedded registry holding the
// demo catalog and its images, the destination another one, both on 127.0.0.1
// (where plain HTTP is allowed). The result counts what was copied; the
// working folder holds the records and the cluster resources to apply.
func ExampleMirror() {
	src, err := demoregistry.StartDemo()
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	dst, err := demoregistry.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Close()
	dir, err := os.MkdirTemp("", "airlock-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "imageset.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: `+src.Catalog+`
    packages:
    - name: demo-operator
`), 0o644); err != nil {
		log.Fatal(err)
	}

	res, err := pipeline.Mirror(context.Background(), pipeline.Options{
		ConfigPath:  config,
		Destination: pipeline.DestinationOptions{Location: location.Docker(dst.Host + "/mirror")},
		Workspace:   location.File(filepath.Join(dir, "workspace")),
	})
	if err != nil {
		log.Fatal(err)
	}
	c := res.Counts()
	fmt.Printf("%s: %d images planned, %d copied, %d failed\n", res.Workflow, c.Planned, c.Copied, c.Failed)
	for _, cat := range res.Catalogs {
		fmt.Printf("catalog rebuilt with %v\n", cat.Packages)
	}
	for _, f := range res.ClusterResources {
		fmt.Println(filepath.Base(f))
	}
	// Output:
	// mirror-to-mirror: 16 images planned, 16 copied, 0 failed
	// catalog rebuilt with [demo-database demo-monitoring demo-operator]
	// README.txt
	// cc-demo-index-v1.yaml
	// cs-demo-index-v1.yaml
	// icsp-operator-0.yaml
	// idms-operator-0.yaml
	// itms-operator-0.yaml
}
