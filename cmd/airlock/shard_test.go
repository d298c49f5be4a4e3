package main

import (
	"os"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/pipeline"
)

func TestShardFlags(t *testing.T) {
	tests := []struct {
		name        string
		shard       string
		shards      int
		env         string // JOB_COMPLETION_INDEX; "-" unset
		wantI       int
		wantN       int
		wantErrText string
	}{
		{"none", "", 0, "-", 0, 0, ""},
		{"explicit", "1/4", 0, "-", 1, 4, ""},
		{"explicit ignores the env", "0/2", 0, "1", 0, 2, ""},
		{"from the Indexed Job", "", 3, "2", 2, 3, ""},
		{"index out of range", "4/4", 0, "-", 0, 0, "0 <= I < N"},
		{"not a fraction", "2", 0, "-", 0, 0, "want I/N"},
		{"negative", "-1/2", 0, "-", 0, 0, "want I/N"},
		{"both", "0/2", 2, "-", 0, 0, "not both"},
		{"env unset", "", 2, "-", 0, 0, "JOB_COMPLETION_INDEX"},
		{"env out of range", "", 2, "2", 0, 0, "want 0 to 1"},
		{"env not a number", "", 2, "x", 0, 0, "want 0 to 1"},
		{"negative count", "", -1, "-", 0, 0, "positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "-" {
				t.Setenv("JOB_COMPLETION_INDEX", tc.env)
			} else {
				t.Setenv("JOB_COMPLETION_INDEX", "")
				unsetenv(t, "JOB_COMPLETION_INDEX")
			}
			var o pipeline.Options
			err := shardFlags(&o, tc.shard, tc.shards)
			if tc.wantErrText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrText) {
					t.Fatalf("got %v, want an error saying %q", err, tc.wantErrText)
				}
				return
			}
			if err != nil || o.Run.Shard != tc.wantI || o.Run.Shards != tc.wantN {
				t.Errorf("got %d/%d, %v; want %d/%d", o.Run.Shard, o.Run.Shards, err, tc.wantI, tc.wantN)
			}
		})
	}
}

// unsetenv removes k for the test (t.Setenv restores it afterwards).
func unsetenv(t *testing.T, k string) {
	t.Helper()
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}
