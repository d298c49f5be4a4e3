package layout_test

import (
	"context"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/endpointtest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/layout"
)

// TestContract runs the endpoint contract against the OCI layout's Source and
// Destination.
func TestContract(t *testing.T) {
	t.Run("Source", func(t *testing.T) {
		endpointtest.Source(t, endpointtest.SourceCase{
			NotFound: layout.ErrNotFound,
			Seed: func(t *testing.T, c *endpointtest.Content) (endpoint.Source, string) {
				dir := t.TempDir()
				d, err := layout.NewDestination(dir)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Push(context.Background(), d, c.Repo); err != nil {
					t.Fatal(err)
				}
				src, err := layout.NewSource(dir)
				if err != nil {
					t.Fatal(err)
				}
				return src, c.Repo
			},
		})
	})
	t.Run("Destination", func(t *testing.T) {
		endpointtest.Destination(t, endpointtest.DestinationCase{
			New: func(t *testing.T) *endpointtest.Dest {
				d, err := layout.NewDestination(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				return &endpointtest.Dest{
					Destination: d,
					ReadBack:    func(*testing.T, []endpointtest.Tagged) endpoint.Source { return d.Source() },
				}
			},
		})
	})
}
