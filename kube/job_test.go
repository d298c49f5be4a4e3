package kube

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/golden"
)

func testOptions(t *testing.T) JobOptions {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join("testdata", "imageset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := os.ReadFile(filepath.Join("testdata", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	return JobOptions{
		Namespace: "airlock", Image: "mirror.example:5000/tools/airlock:v1",
		Destination: "docker://mirror.example:5000/ocp", Shards: 2,
		Config: cfg, Plan: plan, Comment: "two shards of testdata/plan.json",
	}
}

// TestJobGolden pins the manifests (testdata/job.golden.yaml, which the
// conformance module also decodes with k8s.io/api and validates).
func TestJobGolden(t *testing.T) {
	got, err := Job(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "job.golden.yaml"), got)
	for _, s := range []string{"completionMode: Indexed", "completions: 2", "backoffLimitPerIndex: 3", "parallelism: 2",
		"secretName: airlock-mirror-auth", "- --shards", "- --finish", "name: airlock-mirror-finish", "restartPolicy: Never"} {
		if !strings.Contains(string(got), s) {
			t.Errorf("manifests lack %q", s)
		}
	}
}

func TestJobRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *JobOptions)
		want string
	}{
		{"no image", func(o *JobOptions) { o.Image = "" }, "no image"},
		{"no shards", func(o *JobOptions) { o.Shards = 0 }, "at least 1"},
		{"bad name", func(o *JobOptions) { o.Name = "Airlock_Mirror" }, "lower-case"},
		{"bad namespace", func(o *JobOptions) { o.Namespace = "-x" }, "namespace"},
		{"file destination", func(o *JobOptions) { o.Destination = "file:///tmp/x" }, "docker://"},
		{"plan too big", func(o *JobOptions) { o.Plan = bytes.Repeat([]byte("x"), ConfigMapLimit) }, "1 MiB ConfigMap limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t)
			tc.edit(&o)
			_, err := Job(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
			if tc.name == "plan too big" && !errors.Is(err, ErrTooBig) {
				t.Errorf("got %v, want ErrTooBig", err)
			}
		})
	}
}
