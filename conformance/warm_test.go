package conformance

import (
	_ "github.com/airlock-mirror/airlock/imageset"
	_ "github.com/airlock-mirror/airlock/internal/gen/catalog/gen"
	_ "github.com/airlock-mirror/airlock/prune"
	_ "github.com/operator-framework/operator-registry/alpha/declcfg"
	_ "github.com/operator-framework/operator-registry/alpha/model"
	_ "github.com/operator-framework/operator-registry/alpha/property"
)
