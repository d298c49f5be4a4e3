package workspace

import (
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// TestRetire: which selections the inventory counts after mirror runs of dated
// configuration files, retire records and later runs; and the errors of retire.
func TestRetire(t *testing.T) {
	const (
		oct    = "/site/2026/isc-2026-10.yaml"
		nov    = "/site/2026/isc-2026-11.yaml"
		octOld = "/old/isc-2026-10.yaml"
		d1, d2 = "reg/ns", "other/ns"
	)
	mirror := func(cfg, dest string) HistoryRun {
		return HistoryRun{Kind: RunMirror, Destination: dest, ConfigPath: cfg, Complete: true,
			Images: []HistoryImage{{Repository: dest + "/app", Digest: digest.Digest("sha256:" + strings.Repeat("a", 64)), Status: "copied", WantedBy: []Want{{Kind: WantAdditional, Image: cfg}}}}}
	}
	type retire struct {
		config, dest, wantErr string
	}
	for _, tc := range []struct {
		name       string
		runs       []HistoryRun
		retire     []retire
		after      []HistoryRun
		selections string
		// counted are the config paths counted at d1; notCounted start with
		// "CONFIG: WHY".
		counted, notCounted []string
	}{
		{name: "both dated files count", runs: []HistoryRun{mirror(oct, d1), mirror(nov, d1)}, counted: []string{oct, nov}},
		{name: "latest only", runs: []HistoryRun{mirror(oct, d1), mirror(nov, d1)}, selections: SelectionsLatest,
			counted: []string{nov}, notCounted: []string{oct + ": older than the latest selection"}},
		{name: "retired by file name", runs: []HistoryRun{mirror(oct, d1), mirror(nov, d1)}, retire: []retire{{config: "isc-2026-10.yaml"}},
			counted: []string{nov}, notCounted: []string{oct + ": retired by run 3"}},
		{name: "mirrored again after retiring", runs: []HistoryRun{mirror(oct, d1), mirror(nov, d1)}, retire: []retire{{config: oct}},
			after: []HistoryRun{mirror(oct, d1)}, counted: []string{nov, oct}},
		{name: "retired at another destination only", runs: []HistoryRun{mirror(oct, d1), mirror(oct, d2), mirror(nov, d1)}, retire: []retire{{config: oct, dest: d2}},
			counted: []string{oct, nov}},
		{name: "errors", runs: []HistoryRun{mirror(oct, d1), mirror(octOld, d1), mirror(nov, d1)}, retire: []retire{
			{config: "isc-2026-10.yaml", wantErr: "names several recorded configurations"},
			{config: "isc-2026-12.yaml", wantErr: "no mirror run with isc-2026-12.yaml is recorded"},
			{config: nov, dest: d2, wantErr: "not a current selection at other/ns"},
			{config: oct},
			{config: oct, wantErr: "not a current selection at any destination"},
		}, counted: []string{octOld, nov}, notCounted: []string{oct + ": retired by run 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := Dir(t.TempDir())
			for _, r := range tc.runs {
				if _, err := AppendHistory(wd, r); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range tc.retire {
				_, err := Retire(wd, r.config, r.dest)
				if r.wantErr == "" && err != nil || r.wantErr != "" && (err == nil || !strings.Contains(err.Error(), r.wantErr)) {
					t.Errorf("retire %s %s: %v, want %q", r.config, r.dest, err, r.wantErr)
				}
				if r.wantErr != "" && !strings.Contains(r.wantErr, "several") && !errors.Is(err, ErrNoSelection) {
					t.Errorf("retire %s: %v is not ErrNoSelection", r.config, err)
				}
			}
			for _, r := range tc.after {
				if _, err := AppendHistory(wd, r); err != nil {
					t.Fatal(err)
				}
			}
			h, err := ReadHistory(wd)
			if err != nil {
				t.Fatal(err)
			}
			inv := h.Inventory(d1)
			if err := inv.CountSelections(tc.selections); err != nil {
				t.Fatal(err)
			}
			var counted, notCounted []string
			for _, r := range inv.CurrentRuns {
				counted = append(counted, r.ConfigPath)
			}
			for _, n := range inv.NotCounted {
				notCounted = append(notCounted, n.Run.ConfigPath+": "+n.Why)
			}
			if strings.Join(counted, " ") != strings.Join(tc.counted, " ") {
				t.Errorf("counted %v, want %v", counted, tc.counted)
			}
			if len(notCounted) != len(tc.notCounted) {
				t.Fatalf("not counted %v, want %v", notCounted, tc.notCounted)
			}
			for i := range notCounted {
				if !strings.HasPrefix(notCounted[i], tc.notCounted[i]) {
					t.Errorf("not counted %q, want %q…", notCounted[i], tc.notCounted[i])
				}
			}
			if len(inv.Current) == 0 != (len(tc.counted) == 0) {
				t.Errorf("current wants %v with counted %v", inv.Current, counted)
			}
		})
	}
	if err := (&Inventory{}).CountSelections("newest"); err == nil || !strings.Contains(err.Error(), "use all") {
		t.Errorf("--selections newest: %v", err)
	}
}
