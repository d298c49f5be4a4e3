package archive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// ToWrite counts what a batch still has to write of a blob: nothing of one
// staged, shipped or written by another shard, the rest of one an interrupted transfer left partly
// staged; CheckSpace compares that (plus one archive file) with the real
// filesystem's free space and names the numbers and the flag when it does
// not fit.
func TestCheckSpace(t *testing.T) {
	ctx := context.Background()
	staged, shipped, partial, fresh := []byte("staged blob"), []byte("shipped blob"), bytes.Repeat([]byte("p"), 1000), []byte("fresh blob")
	other := []byte("another shard's blob")
	desc := func(b []byte) endpoint.Descriptor {
		return endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
	}
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{ChunkSize: 1 << 20, Shipped: ShippedSet{desc(shipped).Digest: {}}, Elsewhere: endpoint.HeldElsewhere{desc(other).Digest: ""}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.PutBlob(ctx, "r", desc(staged), bytes.NewReader(staged)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.partialPath(desc(partial).Digest), partial[:300], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		b    []byte
		want int64
	}{{staged, 0}, {shipped, 0}, {other, 0}, {partial, 700}, {fresh, int64(len(fresh))}} {
		if got := w.ToWrite(desc(tc.b)); got != tc.want {
			t.Errorf("ToWrite(%q…) = %d, want %d", tc.b[:5], got, tc.want)
		}
	}
	if err := w.CheckSpace(1<<20, "--skip-space-check"); err != nil {
		t.Errorf("1 MiB does not fit: %v", err)
	}
	err = w.CheckSpace(1<<62, "--skip-space-check")
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("4 EiB fit: %v", err)
	}
	for _, want := range []string{"--skip-space-check", dir, "4.0 EiB", "free"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
