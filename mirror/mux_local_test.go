package mirror_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/layout"
)

// countingSource counts the blobs read from it, by digest.
type countingSource struct {
	endpoint.Source
	mu    sync.Mutex
	blobs map[digest.Digest]int
}

func (c *countingSource) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	c.mu.Lock()
	c.blobs[d.Digest]++
	c.mu.Unlock()
	return c.Source.Blob(ctx, repo, d)
}

// A blob a local layout holds is read there, not from Default; one it
// lacks, and any blob of a layout's repository, is read where it was before.
func TestSourceMuxLocalBlobs(t *testing.T) {
	ctx := context.Background()
	newLayout := func(blobs ...[]byte) string {
		dir := t.TempDir()
		d, err := layout.NewDestination(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blobs {
			if err := d.PutBlob(ctx, "r", endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}, bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	held, other := []byte("held locally"), []byte("only at the registry")
	reg, err := layout.NewSource(newLayout(held, other))
	if err != nil {
		t.Fatal(err)
	}
	src := &countingSource{Source: reg, blobs: map[digest.Digest]int{}}
	m := &mirror.SourceMux{Default: src}
	if err := m.AddLocalBlobs(newLayout(held)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		b         []byte
		off       int64
		wantReads int
	}{{held, 0, 0}, {held, 5, 0}, {other, 0, 1}} {
		d := endpoint.Descriptor{Digest: digest.FromBytes(tc.b), Size: int64(len(tc.b))}
		rc, start, err := m.BlobFrom(ctx, "quay.example/ocp/release", d, tc.off)
		if err != nil {
			t.Fatalf("BlobFrom(%q, %d): %v", tc.b, tc.off, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(got) != string(tc.b[start:]) {
			t.Errorf("BlobFrom(%q, %d) read %q from %d (%v)", tc.b, tc.off, got, start, err)
		}
		if n := src.blobs[d.Digest]; n != tc.wantReads {
			t.Errorf("BlobFrom(%q): Default read it %d times, want %d", tc.b, n, tc.wantReads)
		}
	}
	if err := m.AddLocalBlobs(t.TempDir()); err == nil {
		t.Error("AddLocalBlobs(a folder that is no layout) succeeded")
	}
}
