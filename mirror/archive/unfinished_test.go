package archive

import (
	"errors"
	"strings"
	"testing"
)

// Opening a batch whose mirror-to-disk run did not finish says so, not that
// the folder holds no chunks.
func TestOpenUnfinishedBatch(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, err = Open(dir)
	if !errors.Is(err, ErrUnfinished) || !strings.Contains(err.Error(), "is an unfinished batch") || strings.Contains(err.Error(), "holds no") {
		t.Fatalf("Open of an unfinished batch: %v", err)
	}
	if _, err := Open(t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of an empty folder: %v, want ErrNotFound", err)
	}
}
