package mirror_test

import (
	"context"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/endpointtest"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/layout"
)

// TestSourceMuxContract runs the Source contract against SourceMux, both ways
// it routes: a repository named LayoutRepoPrefix+dir read from that OCI
// layout, and any other repository read from Default.
func TestSourceMuxContract(t *testing.T) {
	seedLayout := func(t *testing.T, c *endpointtest.Content) string {
		dir := t.TempDir()
		d, err := layout.NewDestination(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Push(context.Background(), d, c.Repo); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("Layout", func(t *testing.T) {
		endpointtest.Source(t, endpointtest.SourceCase{
			NotFound: layout.ErrNotFound,
			Seed: func(t *testing.T, c *endpointtest.Content) (endpoint.Source, string) {
				return &mirror.SourceMux{}, mirror.LayoutRepoPrefix + seedLayout(t, c)
			},
		})
	})
	t.Run("LocalBlobs", func(t *testing.T) {
		endpointtest.Source(t, endpointtest.SourceCase{
			NotFound: layout.ErrNotFound,
			Seed: func(t *testing.T, c *endpointtest.Content) (endpoint.Source, string) {
				src, err := layout.NewSource(seedLayout(t, c))
				if err != nil {
					t.Fatal(err)
				}
				m := &mirror.SourceMux{Default: src}
				if err := m.AddLocalBlobs(seedLayout(t, c)); err != nil {
					t.Fatal(err)
				}
				return m, c.Repo
			},
		})
	})
	t.Run("Default", func(t *testing.T) {
		endpointtest.Source(t, endpointtest.SourceCase{
			NotFound: layout.ErrNotFound,
			Seed: func(t *testing.T, c *endpointtest.Content) (endpoint.Source, string) {
				src, err := layout.NewSource(seedLayout(t, c))
				if err != nil {
					t.Fatal(err)
				}
				return &mirror.SourceMux{Default: src}, c.Repo
			},
		})
	})
}
