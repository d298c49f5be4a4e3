package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// TestStalledRegistryDefaultFlags runs the airlock binary (this test binary)
// with its default timeouts against a source and a destination that accept
// connections and never answer, with default flags and --retry-times 0: each run
// must exit non-zero within 60 s naming the host (the bound of docs/copy.md,
// "Timeouts and the circuit breaker"). A destination answering 503 to every
// request must stop the run within 15 s.
func TestStalledRegistryDefaultFlags(t *testing.T) {
	// It waits on timeouts; in parallel, the package's other process-only tests
	// use the cores meanwhile. It runs airlock as processes: no shared flags.
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for the default timeouts (30 s)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := registrytest.Start(t)
	imagetest.MustPush(t, src.Host()+"/apps/one:1.0", fakeimage.Spec{Seed: 31, Layers: 1})
	cases := []struct {
		name  string
		side  registrytest.Side
		fault registrytest.Fault
		args  []string
		bound time.Duration
		want  string
	}{
		{"stalled source", registrytest.SourceSide, registrytest.Stall, nil, 60 * time.Second, "stopped answering"},
		{"stalled source, --retry-times 0", registrytest.SourceSide, registrytest.Stall, []string{"--retry-times", "0"}, 60 * time.Second, "stopped answering"},
		{"stalled destination", registrytest.DestinationSide, registrytest.Stall, nil, 60 * time.Second, "stopped answering"},
		{"stalled destination, --retry-times 0", registrytest.DestinationSide, registrytest.Stall, []string{"--retry-times", "0"}, 60 * time.Second, "stopped answering"},
		{"source answering headers then stalling", registrytest.SourceSide, registrytest.StallBody, nil, 60 * time.Second, "stopped answering"},
		{"destination answering headers then stalling", registrytest.DestinationSide, registrytest.StallBody, nil, 60 * time.Second, "stopped answering"},
		{"destination answering 503", registrytest.DestinationSide, registrytest.Unavailable, nil, 15 * time.Second, "503"},
	}
	// Every case at once, each in its own process: the runs wait, they do not
	// compute, and -parallel would run only GOMAXPROCS of them together.
	type outcome struct {
		proxy string
		out   []byte
		err   error
		took  time.Duration
	}
	results := make([]outcome, len(cases))
	var wg sync.WaitGroup
	for i, tc := range cases {
		plan := registrytest.FaultPlan{Match: registrytest.Everything, Rate: 1, Kinds: []registrytest.Fault{tc.fault}}
		proxy, srcHost, dstHost := registrytest.ProxySide(t, tc.side, src, registrytest.Start(t), plan)
		dir := t.TempDir()
		cfg := filepath.Join(dir, "isc.yaml")
		if err := os.WriteFile(cfg, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: "+srcHost+"/apps/one:1.0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"mirror", "-c", cfg, "--workspace", "file://" + filepath.Join(dir, "ws"), "docker://" + dstHost + "/mirror"}, tc.args...)
		results[i].proxy = proxy.Host()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, self, args...)
			cmd.Env = append(os.Environ(), "AIRLOCK_TEST_RUN_MAIN=1")
			start := time.Now()
			results[i].out, results[i].err = cmd.CombinedOutput()
			results[i].took = time.Since(start)
		}()
	}
	wg.Wait()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := results[i]
			var ee *exec.ExitError
			if !errors.As(r.err, &ee) || ee.ExitCode() <= 0 {
				t.Fatalf("exit: %v (want a non-zero exit)\n%s", r.err, r.out)
			}
			if !strings.Contains(string(r.out), "registry unreachable: "+r.proxy) || !strings.Contains(string(r.out), tc.want) {
				t.Fatalf("the output does not name %s (%q):\n%s", r.proxy, tc.want, r.out)
			}
			if r.took > tc.bound {
				t.Errorf("exit after %s, the bound is %s\n%s", r.took.Round(time.Second), tc.bound, r.out)
			}
			t.Logf("exit %d after %s: %s", ee.ExitCode(), r.took.Round(100*time.Millisecond), strings.TrimSpace(string(r.out)))
		})
	}
}
