// Package golden is the tests' one golden-file check: compare output with a
// file under testdata/, or rewrite the file when the test binary runs with
// -update (go test ./PKG -update).
//
// Test support only: the binary never links it (internal/depcheck).
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// Updating reports whether the test runs with -update.
func Updating() bool { return *update }

// Check compares got with the file at path; with -update it writes got there
// (creating folders) instead.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test with -update if the change is intended, and review the diff)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
