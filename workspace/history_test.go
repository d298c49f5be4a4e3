package workspace

import (
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// The history records the copy engine's statuses; the word for a failure must
// stay the engine's.
func TestStatusFailedIsTheEngines(t *testing.T) {
	if statusFailed != transfer.StatusFailed {
		t.Fatalf("statusFailed %q, the copy engine says %q", statusFailed, transfer.StatusFailed)
	}
	for status, want := range map[string]bool{transfer.StatusCopied: true, transfer.StatusSkipped: true, transfer.StatusFailed: false, StatusNotRun: false, StatusPlanned: false, "": false} {
		if got := (HistoryImage{Status: status}).Mirrored(); got != want {
			t.Errorf("Mirrored with status %q = %v, want %v", status, got, want)
		}
	}
}

// Concurrent runs never overwrite each other's history record.
func TestAppendHistoryConcurrent(t *testing.T) {
	wd := Dir(t.TempDir())
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := AppendHistory(wd, HistoryRun{Kind: RunMirror, Destination: "reg/ns"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	h, err := ReadHistory(wd)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != n {
		t.Fatalf("%d runs recorded, want %d", len(h.Runs), n)
	}
	for i, r := range h.Runs {
		if r.Seq != i+1 {
			t.Errorf("run %d has seq %d", i, r.Seq)
		}
	}
}
