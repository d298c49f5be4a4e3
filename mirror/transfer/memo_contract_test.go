package transfer_test

import (
	"context"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/endpointtest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// TestContract runs the endpoint Source contract against a MemoSource that
// has kept every tagged manifest of its source (the state planning leaves it
// in), so that reads are served from memory first and from the source after.
func TestContract(t *testing.T) {
	endpointtest.Source(t, endpointtest.SourceCase{
		NotFound: layout.ErrNotFound,
		Seed: func(t *testing.T, c *endpointtest.Content) (endpoint.Source, string) {
			return filledMemo(t, c), c.Repo
		},
	})
}

// TestMemoCancelled: a manifest kept in memory is not served to a cancelled
// context (the contract's cancelled read may come after the memory was
// emptied, so it is checked here on a full one).
func TestMemoCancelled(t *testing.T) {
	c := endpointtest.NewContent()
	memo := filledMemo(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, im := range c.Tagged() {
		if _, err := memo.Manifest(ctx, c.Repo, im.Tag); err == nil {
			t.Errorf("Manifest(%s) with a cancelled context: no error", im.Tag)
		}
	}
}

// filledMemo is a MemoSource over an OCI layout holding c, having kept every
// tagged manifest (the state planning leaves it in).
func filledMemo(t *testing.T, c *endpointtest.Content) *transfer.MemoSource {
	t.Helper()
	dir := t.TempDir()
	d, err := layout.NewDestination(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Push(ctx, d, c.Repo); err != nil {
		t.Fatal(err)
	}
	src, err := layout.NewSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	memo := transfer.NewMemoSource(src)
	for _, im := range c.Tagged() {
		if _, err := memo.Manifest(ctx, c.Repo, im.Tag); err != nil {
			t.Fatal(err)
		}
	}
	memo.StopFilling()
	return memo
}
