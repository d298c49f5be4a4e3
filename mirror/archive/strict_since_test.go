package archive

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
)

// TestStrictArchiveRefusesOversizedBlob: with Strict (--strict-archive) a blob
// larger than the chunk size fails Finish, naming the blob, and no chunk is
// written; without it the blob gets a chunk of its own (TestOversizedBlobGetsOwnChunk).
func TestStrictArchiveRefusesOversizedBlob(t *testing.T) {
	rng := testRNG(3)
	big := randBytes(rng, 40<<10)
	imgs := []testImage{makeImage(rng, "ns/big", "v1", big), makeImage(rng, "ns/small", "v1", randBytes(rng, 2000))}
	for _, strict := range []bool{false, true} {
		dir := t.TempDir()
		w, err := NewWriter(dir, WriterOptions{ChunkSize: 16 << 10, Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range imgs {
			push(t, context.Background(), w, img)
		}
		_, err = w.Finish(context.Background(), metaFor(imgs))
		w.Close()
		chunks, _ := filepath.Glob(filepath.Join(dir, "airlock_*.tar"))
		if !strict {
			if err != nil || len(chunks) == 0 {
				t.Fatalf("without --strict-archive: %v, %d chunks", err, len(chunks))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), digest.FromBytes(big).String()) || !strings.Contains(err.Error(), "--strict-archive") {
			t.Fatalf("with --strict-archive: %v", err)
		}
		if len(chunks) != 0 {
			t.Errorf("chunks written although the archive was refused: %v", chunks)
		}
	}
}

// TestShippedBefore: --since DATE builds on the archives recorded before DATE
// only; archives recorded before airlock kept times count as older than any date.
func TestShippedBefore(t *testing.T) {
	d := func(s string) digest.Digest { return digest.FromString(s) }
	day := func(n int) time.Time { return time.Date(2026, 10, n, 12, 0, 0, 0, time.UTC) }
	s := &State{
		Archives: []StateArchive{
			{ID: "old", Batch: 1, Dir: "/t/batch-0001"}, // no time: written by an older airlock
			{ID: "oct5", Batch: 2, Dir: "/t/batch-0002", Time: day(5)},
			{ID: "oct20", Batch: 3, Dir: "/t/batch-0003", Time: day(20)},
		},
		Blobs: map[digest.Digest]StateBlob{
			d("a"): {ArchiveID: "old"}, d("b"): {ArchiveID: "oct5"}, d("c"): {ArchiveID: "oct20"},
		},
	}
	tests := []struct {
		since   time.Time
		blobs   []digest.Digest
		batches []int
	}{
		{day(1), []digest.Digest{d("a")}, []int{1}},
		{day(10), []digest.Digest{d("a"), d("b")}, []int{1, 2}},
		{day(21), []digest.Digest{d("a"), d("b"), d("c")}, []int{1, 2, 3}},
	}
	for _, tc := range tests {
		shipped, on := s.ShippedBefore(tc.since)
		if len(shipped) != len(tc.blobs) {
			t.Errorf("since %s: %d blobs shipped before, want %d", tc.since.Format(time.DateOnly), len(shipped), len(tc.blobs))
		}
		for _, b := range tc.blobs {
			if _, ok := shipped[b]; !ok {
				t.Errorf("since %s: %s not counted as shipped", tc.since.Format(time.DateOnly), b)
			}
		}
		var got []int
		for _, b := range on {
			got = append(got, b.Batch)
		}
		if len(got) != len(tc.batches) || (len(got) > 0 && got[len(got)-1] != tc.batches[len(tc.batches)-1]) {
			t.Errorf("since %s: builds on %v, want %v", tc.since.Format(time.DateOnly), got, tc.batches)
		}
	}
}

// TestStateRecordsTime: Record keeps when each archive was recorded.
func TestStateRecordsTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "archive-state.json")
	s, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	if err := s.Record(&Manifest{ArchiveID: "x", Batch: 1}, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	s2, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Archives) != 1 || s2.Archives[0].Time.Before(before) {
		t.Fatalf("recorded %+v", s2.Archives)
	}
}
