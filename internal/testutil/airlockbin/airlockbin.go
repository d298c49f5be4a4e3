// Package airlockbin builds the airlock command for tests that run it as a
// process of its own.
//
// The binary is built with the build flags of the test binary that asks for
// it (its -tags and -race, read from its build information), so that the go
// command finds every package the test already compiled in its build cache
// and only compiles cmd/airlock's own and links: under `go test -race` a
// build with other flags compiles the whole dependency tree again. A binary
// built with -race also reports the data races of the processes it runs.
//
// Test support only: the binary never links it (internal/depcheck).
package airlockbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	bin  string
	err  error
)

// Build returns the path of cmd/airlock, built once per test process with
// the test binary's build flags (Flags). The test process must call Remove
// when its tests are done (from TestMain).
func Build(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, err = os.MkdirTemp("", "airlock-bin-")
		if err != nil {
			return
		}
		bin = filepath.Join(dir, "airlock")
		args := append([]string{"build", "-o", bin}, Flags()...)
		args = append(args, "github.com/airlock-mirror/airlock/cmd/airlock")
		if out, berr := exec.Command("go", args...).CombinedOutput(); berr != nil {
			err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), berr, out)
		}
	})
	if err != nil {
		t.Fatalf("build airlock: %v", err)
	}
	return bin
}

// Remove deletes the binary Build made (nothing when it made none).
func Remove() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Flags are the go build flags the running binary was built with that change
// what is compiled: -race and -tags. A binary without build information
// (not built by the go command) gives none.
func Flags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return flagsOf(info.Settings)
}

func flagsOf(settings []debug.BuildSetting) []string {
	var out []string
	for _, s := range settings {
		switch s.Key {
		case "-race":
			if s.Value == "true" {
				out = append(out, "-race")
			}
		case "-tags":
			if s.Value != "" {
				out = append(out, "-tags", s.Value)
			}
		}
	}
	return out
}
