package workspace

import (
	"os"
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

// Records written before destinations were parsed as locations kept the
// namespace's trailing slash: they are read as the same destination.
func TestOldDestinationRecords(t *testing.T) {
	wd := Dir(t.TempDir())
	if _, err := AppendHistory(wd, HistoryRun{Kind: RunMirror, Destination: "reg:5000/ns/"}); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHistory(wd)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Runs[0].Destination; got != "reg:5000/ns" {
		t.Errorf("history destination %q, want reg:5000/ns", got)
	}
	if err := os.WriteFile(wd.LoadedPath(), []byte(`{"batches":[{"destination":"reg:5000/ns/","archiveID":"a1","dir":"/d"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadLoaded(wd)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.LoadedInto("a1", "reg:5000/ns") {
		t.Errorf("loaded record %+v: archive a1 not found loaded into reg:5000/ns", rec.Batches)
	}
}
