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

// A build is one binary Build or BuildWithoutRace made, once per test process.
type build struct {
	once sync.Once
	bin  string
	err  error
}

var (
	dirOnce sync.Once
	dir     string
	dirErr  error

	withFlags, withoutRace build
)

// Build returns the path of cmd/airlock, built once per test process with
// the test binary's build flags (Flags). The test process must call Remove
// when its tests are done (from TestMain).
func Build(t testing.TB) string {
	t.Helper()
	return withFlags.get(t, "airlock", Flags())
}

// BuildWithoutRace returns the path of cmd/airlock built once per test
// process with the test binary's -tags but without -race: for processes a
// test runs beside the code under test and does not test, such as the
// registries of a benchmark run (`airlock registry serve`), whose CPU the
// race detector would multiply. Its packages are compiled as `make lint`
// and `go vet` without -race compile them. Remove deletes it too.
func BuildWithoutRace(t testing.TB) string {
	t.Helper()
	return withoutRace.get(t, "airlock-norace", dropRace(Flags()))
}

// dropRace is flags without -race.
func dropRace(flags []string) []string {
	var out []string
	for _, f := range flags {
		if f != "-race" {
			out = append(out, f)
		}
	}
	return out
}

// get builds cmd/airlock with flags into name in the package's folder, once.
func (b *build) get(t testing.TB, name string, flags []string) string {
	t.Helper()
	b.once.Do(func() {
		dirOnce.Do(func() { dir, dirErr = os.MkdirTemp("", "airlock-bin-") })
		if dirErr != nil {
			b.err = dirErr
			return
		}
		b.bin = filepath.Join(dir, name)
		args := append([]string{"build", "-o", b.bin, LinkFlags}, flags...)
		args = append(args, "github.com/airlock-mirror/airlock/cmd/airlock")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("build airlock: %v", b.err)
	}
	return b.bin
}

// LinkFlags are the go build flags of the binaries tests build to run:
// without DWARF (-w), which only a debugger reads, the link of a race-built
// airlock takes about 9.7 CPU-s instead of 14 (panics and race reports
// still name functions, files and lines: the runtime's symbol table stays).
const LinkFlags = "-ldflags=-w"

// Remove deletes the binaries Build and BuildWithoutRace made (nothing when
// they made none).
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
