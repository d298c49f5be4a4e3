package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Each run gets its own log; only the newest KeepLogs stay.
func TestNewRunLogKeepsABound(t *testing.T) {
	d := At(t.TempDir())
	start := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	for i := range KeepLogs + 5 {
		f, err := d.NewRunLog(start.Add(time.Duration(i) * time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	ents, err := os.ReadDir(d.LogsDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != KeepLogs {
		t.Fatalf("%d logs kept, want %d", len(ents), KeepLogs)
	}
	if _, err := os.Stat(filepath.Join(d.LogsDir(), ents[0].Name())); err != nil || ents[0].Name() < "airlock-2026-11-29T04-05-00Z" {
		t.Errorf("oldest kept log %s: the oldest were not the ones removed", ents[0].Name())
	}
}
