package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// TestListReleases runs airlock list releases against the test update
// service; the outputs are goldens (oc-mirror's shapes, and the preview of a
// mirror.platform channel).
func TestListReleases(t *testing.T) {
	s := cincinnatitest.New(t)
	tests := []struct {
		name string
		args []string
	}{
		{"version", []string{"--version", "4.16"}},
		{"channels", []string{"--channels", "--version", "4.15"}},
		{"channel-archs", []string{"--channel", "eus-4.14", "--filter-by-archs", "arm64,multi"}},
		{"preview-path", []string{"--channel", "eus-4.16", "--min-version", "4.16.28", "--max-version", "4.16.34", "--shortest-path", "--allow-conditional-updates"}},
		{"preview-range", []string{"--channel", "stable-4.16", "--min-version", "4.16.50"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stdout, _, err := runCmd(ctx, append([]string{"list", "releases", "--graph-url", s.URL}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "list-releases", tc.name+".txt"), []byte(stdout))
		})
	}
}

func TestListReleasesOverrideAndGraph(t *testing.T) {
	s := cincinnatitest.New(t)
	t.Setenv("UPDATE_URL_OVERRIDE", s.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := filepath.Join(t.TempDir(), "g.svg")
	if _, _, err := runCmd(ctx, "list", "releases", "--channel", "eus-4.16", "--min-version", "4.16.28", "--max-version", "4.16.34", "--graph", "-o", out); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "LabeledMachineConfigAndContainerRuntimeConfigBlocksMCO") {
		t.Fatalf("picture %.200q, %v", svg, err)
	}
	stdout, _, err := runCmd(ctx, "list", "releases", "--channel", "stable-4.15", "--graph", "--format", "mmd")
	if err != nil || !strings.HasPrefix(stdout, "flowchart LR") {
		t.Fatalf("mermaid on stdout: %.100q, %v", stdout, err)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests to $UPDATE_URL_OVERRIDE, want 2", n)
	}
}

func TestListReleasesErrors(t *testing.T) {
	s := cincinnatitest.New(t)
	checkCmdErrors(t, []cmdErrorCase{
		{"nothing", []string{"list", "releases", "--graph-url", s.URL}, "give --channel C or --version X.Y"},
		{"channels without version", []string{"list", "releases", "--channels", "--graph-url", s.URL}, "--channels needs --version"},
		{"bad arch", []string{"list", "releases", "--version", "4.16", "--filter-by-archs", "x86_64", "--graph-url", s.URL}, `unknown architecture "x86_64"`},
		{"unknown channel", []string{"list", "releases", "--channel", "stable-9.9", "--graph-url", s.URL}, "channel stable-9.9 (ocp) has no releases for amd64"},
		{"min not in channel", []string{"list", "releases", "--channel", "stable-4.15", "--min-version", "4.15.1", "--graph-url", s.URL}, "--min-version: version 4.15.1 is not in channel stable-4.15 for amd64 (nearest: 4.15.0 below, 4.15.2 above)"},
		{"graph two archs", []string{"list", "releases", "--version", "4.16", "--graph", "--filter-by-archs", "amd64,arm64", "--graph-url", s.URL}, "--graph draws one architecture"},
	})
}
