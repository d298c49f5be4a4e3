package pipeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The catalog memo's build ID is the Go build ID of the running executable,
// as `go tool buildid` reads it; a file that is not an ELF executable has none
// (buildID then hashes the file).
func TestGoBuildID(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	got := goBuildID(exe)
	if got == "" {
		t.Fatalf("no Go build ID read from %s", exe)
	}
	if buildID() != "go:"+got {
		t.Errorf("buildID() = %q, want go:%s", buildID(), got)
	}
	if gobin, err := exec.LookPath("go"); err == nil {
		out, err := exec.Command(gobin, "tool", "buildid", exe).Output()
		if err != nil {
			t.Fatalf("go tool buildid: %v", err)
		}
		if want := strings.TrimSpace(string(out)); got != want {
			t.Errorf("goBuildID = %q, go tool buildid says %q", got, want)
		}
	}
	text := filepath.Join(t.TempDir(), "not-elf")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if id := goBuildID(text); id != "" {
		t.Errorf("a shell script has Go build ID %q", id)
	}
}
