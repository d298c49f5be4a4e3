package workload_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// TestDiskFloors pulls the workload from a registry into one file (the
// mirror-to-disk floor) and pushes it from that file into another registry
// (the disk-to-mirror floor): the file holds every unique blob once, back to
// back, and the second registry gets every blob once, verified.
func TestDiskFloors(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	w := tiny(t)
	if _, err := w.Push(ctx, workload.PushOptions{Registry: src.Host(), Parallel: 4}); err != nil {
		t.Fatal(err)
	}
	s := w.Stats()
	file := filepath.Join(t.TempDir(), "blobs")
	st, err := w.PullToFile(ctx, workload.PushOptions{From: src.Host(), Parallel: 4, ToFile: file})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Blobs != int64(s.Blobs) || st.Bytes != s.BlobBytes || fi.Size() != s.BlobBytes {
		t.Errorf("pulled %d blobs, %d bytes, file of %d bytes; want %d blobs, %d bytes", st.Blobs, st.Bytes, fi.Size(), s.Blobs, s.BlobBytes)
	}
	dst.Reset()
	st, err = w.Push(ctx, workload.PushOptions{Registry: dst.Host(), Parallel: 4, FromFile: file, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := dst.Counts(); st.Blobs != int64(s.Blobs) || c.BlobsCommitted != int64(s.Blobs) || c.BytesUploaded != s.BlobBytes {
		t.Errorf("pushed from the file %+v, registry committed %d blobs, %d bytes; want %d, %d", st, c.BlobsCommitted, c.BytesUploaded, s.Blobs, s.BlobBytes)
	}

	// A byte changed in the file: the verifying push fails and commits nothing wrong.
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, s.BlobBytes/2); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, s.BlobBytes/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	other := registrytest.Start(t)
	if _, err := w.Push(ctx, workload.PushOptions{Registry: other.Host(), Parallel: 4, FromFile: file, Verify: true}); err == nil {
		t.Error("a changed byte in the file was pushed without an error")
	} else if c := other.Counts(); c.BlobsCommitted >= int64(s.Blobs) {
		t.Errorf("every blob committed despite a changed byte: %v", err)
	}

	// Without a source, or from a registry without the workload, it fails.
	if _, err := w.PullToFile(ctx, workload.PushOptions{ToFile: file}); err == nil || !strings.Contains(err.Error(), "From") {
		t.Errorf("no source: %v", err)
	}
	if _, err := w.PullToFile(ctx, workload.PushOptions{From: other.Host(), ToFile: filepath.Join(t.TempDir(), "x")}); err == nil {
		t.Error("pulled a workload the registry does not have")
	}
}
