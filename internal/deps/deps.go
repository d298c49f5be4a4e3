// Package deps pins the module's chosen dependencies in go.mod while the packages
// that use them are being written. It is removed once every dependency has a user.
package deps

import (
	_ "github.com/blang/semver/v4"
	_ "github.com/containers/image/v5/pkg/docker/config"
	_ "github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	_ "github.com/google/go-containerregistry/pkg/v1/layout"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/opencontainers/go-digest"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sync/errgroup"
	_ "sigs.k8s.io/yaml"
)
