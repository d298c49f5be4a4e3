package registryproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/airlockbin"
)

// pkg is the registry process's main package.
const pkg = "github.com/airlock-mirror/airlock/internal/testutil/registryproc/cmd/registryproc"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the registry process's binary, built once per test process
// with the test binary's -tags but never -race (BuildFlags). It is built
// into one folder per user under the system's temporary folder, shared by
// every test process: the go command relinks it only when a source changed
// (it compares the binary's build ID), and a lock file keeps two test
// processes from building it at once. Its dependencies compile once per
// machine (the build cache), not once per test process.
func Binary() (string, error) {
	buildOnce.Do(func() { binPath, buildErr = build() })
	return binPath, buildErr
}

// BuildFlags are the go build flags of the registry process: the test
// binary's (airlockbin.Flags) less -race.
func BuildFlags() []string {
	var out []string
	for _, f := range airlockbin.Flags() {
		if f != "-race" {
			out = append(out, f)
		}
	}
	return out
}

// startEnv is the test process's environment when it started: the go
// command finds its build cache from HOME (or XDG_CACHE_HOME), which tests
// move to a folder of their own (mirror/registry's TestMain does), and in an
// empty cache it would compile the whole tree again.
var startEnv = os.Environ()

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func build() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("airlock-registryproc-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("registry process: %w", err)
	}
	if err := ownedPrivate(dir); err != nil {
		return "", fmt.Errorf("registry process: %s: %w (remove it)", dir, err)
	}
	flags := BuildFlags()
	name := "registryproc"
	for _, f := range flags {
		if !strings.HasPrefix(f, "-") {
			name += "-" + unsafeName.ReplaceAllString(f, "_") // the tags
		}
	}
	bin := filepath.Join(dir, name)
	unlock, err := lockFile(bin + ".lock")
	if err != nil {
		return "", fmt.Errorf("registry process: lock %s: %w", bin+".lock", err)
	}
	defer unlock()
	args := append([]string{"build", "-o", bin, airlockbin.LinkFlags}, flags...)
	// A build from an empty cache takes about 200 CPU-s: the bound is far
	// above it, so that a stuck build fails with its output, not at the test timeout.
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	// From this package's folder when it is there: a test of another module
	// (conformance/) builds it within airlock's module, with its go.sum.
	if _, file, _, ok := runtime.Caller(0); ok {
		if _, err := os.Stat(filepath.Join(filepath.Dir(file), "cmd", "registryproc")); err == nil {
			cmd = exec.CommandContext(ctx, "go", append(args, "./cmd/registryproc")...)
			cmd.Dir = filepath.Dir(file)
		}
	}
	cmd.Env = startEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("registry process: build it: %s (in %q): %v\n%s", strings.Join(cmd.Args, " "), cmd.Dir, err, out)
	}
	return bin, nil
}

// buildTimeout bounds the build of the registry process.
const buildTimeout = 15 * time.Minute
