// Package demoregistry serves embedded registries on 127.0.0.1 for the
// runnable examples of the library's entry points (pipeline.Mirror,
// catalogimage.Fetch): an empty one, or one holding the demo catalog of
// testdata/demo as a catalog image with every image it names. Examples have
// no testing.T, so errors are returned and Close stops the registry.
//
// Test support only: the binary never links it (internal/depcheck).
package demoregistry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/registryproc"
)

// CatalogRepo is the repository of the demo catalog image, tag v1.
const CatalogRepo = "airlock-demo/demo-index"

// Registry is a running embedded registry.
type Registry struct {
	// Host is "127.0.0.1:PORT" (plain HTTP, which airlock allows on loopback).
	Host string
	// Catalog is the demo catalog image ("HOST/airlock-demo/demo-index:v1"),
	// when the registry holds it.
	Catalog string

	srv registryproc.Registry
}

// Start serves an empty registry in memory (in a registry process, as
// registrytest.Start does).
func Start() (*Registry, error) {
	srv, err := registryproc.Run(registryproc.Config{})
	if err != nil {
		return nil, err
	}
	return &Registry{Host: strings.TrimPrefix(srv.BaseURL(), "http://"), srv: srv}, nil
}

// StartDemo serves a registry holding the demo catalog (testdata/demo/catalog)
// as Catalog and every image it names, small stand-ins.
func StartDemo() (*Registry, error) {
	r, err := Start()
	if err != nil {
		return nil, err
	}
	root, err := moduleRoot()
	if err == nil {
		var work string
		if work, err = os.MkdirTemp("", "airlock-demo-seed-"); err == nil {
			defer os.RemoveAll(work)
			var res *seed.Result
			res, err = seed.Seed(context.Background(), seed.Options{
				Registry: r.Host, CatalogDir: filepath.Join(root, "testdata", "demo", "catalog"),
				CatalogRepo: CatalogRepo, Insecure: true, WorkDir: work,
			})
			if err == nil {
				r.Catalog = res.Catalog
			}
		}
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Stop() }

// moduleRoot is the folder of the repository's go.mod, above the working
// directory (a test runs in its package's folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "testdata", "demo", "catalog")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("demoregistry: no testdata/demo/catalog above the working directory")
		}
		dir = parent
	}
}
