package workspace

import (
	"os"
	"path/filepath"
	"slices"
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

// Two runs of one process in the same second get two logs, the second
// sorting after the first (the newest is kept when the oldest go).
func TestNewRunLogSameSecond(t *testing.T) {
	d := At(t.TempDir())
	at := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	var names []string
	for range 3 {
		f, err := d.NewRunLog(at)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(f.Name()))
		f.Close()
	}
	if !slices.IsSorted(names) || names[0] == names[1] || names[1] == names[2] {
		t.Errorf("logs of the same second: %v, want three names in order", names)
	}
}
