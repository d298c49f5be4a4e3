package workspace

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// A selection is what the latest mirror run of one configuration file to a
// destination selected; delete --stale keeps everything a current selection
// wants. Dated configuration files (isc-2026-10.yaml, then isc-2026-11.yaml)
// would each stay current forever: retiring one appends a record to the
// history (kind RunRetire) after which its runs no longer count, until a new
// mirror run with that file makes it current again.

// RunRetire is the kind of a history record retiring a selection.
const RunRetire = "retire"

// Selection choices of delete --stale (--selections).
const (
	// SelectionsAll counts the latest run of every configuration file that
	// is not retired.
	SelectionsAll = "all"
	// SelectionsLatest counts only the newest of those runs.
	SelectionsLatest = "latest"
)

// ErrNoSelection means retire named a configuration the history does not know
// as a current selection.
var ErrNoSelection = errors.New("no current selection of that configuration")

// Retire records in the history of d that the selection of the configuration
// file config is retired at dest (at every destination where it is current
// when dest is ""). config is the path a run recorded (made absolute), or the
// name of a file only one recorded path has. It returns the records appended.
func Retire(d Dir, config, dest string) ([]HistoryRun, error) {
	h, err := ReadHistory(d)
	if err != nil {
		return nil, err
	}
	path, err := h.recordedConfig(config)
	if err != nil {
		return nil, err
	}
	var dests []string
	for _, run := range h.Runs {
		if run.ConfigPath == path && run.Kind == RunMirror && !slices.Contains(dests, run.Destination) && (dest == "" || run.Destination == dest) {
			dests = append(dests, run.Destination)
		}
	}
	var out []HistoryRun
	for _, ds := range dests {
		if !slices.ContainsFunc(h.Inventory(ds).CurrentRuns, func(r HistoryRun) bool { return r.ConfigPath == path }) {
			continue // retired already
		}
		run, err := AppendHistory(d, HistoryRun{Kind: RunRetire, Time: time.Now().UTC(), Destination: ds, ConfigPath: path, Complete: true})
		if err != nil {
			return out, err
		}
		out = append(out, run)
	}
	if len(out) == 0 {
		where := "any destination"
		if dest != "" {
			where = dest
		}
		return nil, fmt.Errorf("%w: %s is not a current selection at %s in %s (retired already, or never mirrored there); airlock history lists the runs", ErrNoSelection, path, where, h.Dir)
	}
	return out, nil
}

// recordedConfig finds the configuration path the mirror runs recorded for
// config.
func (h *History) recordedConfig(config string) (string, error) {
	seen := map[string]bool{}
	var paths []string
	for _, run := range h.Runs {
		if run.Kind == RunMirror && run.ConfigPath != "" && !seen[run.ConfigPath] {
			seen[run.ConfigPath] = true
			paths = append(paths, run.ConfigPath)
		}
	}
	sort.Strings(paths)
	if abs, err := filepath.Abs(config); err == nil && seen[abs] {
		return abs, nil
	}
	var named []string
	for _, p := range paths {
		if filepath.Base(p) == filepath.Base(config) {
			named = append(named, p)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		return "", fmt.Errorf("%w: no mirror run with %s is recorded in %s; the recorded configurations are: %s", ErrNoSelection, config, h.Dir, strings.Join(paths, ", "))
	}
	return "", fmt.Errorf("%s names several recorded configurations (%s): give its full path", config, strings.Join(named, ", "))
}

// countOnly makes runs the current selections.
func (inv *Inventory) countOnly(runs []HistoryRun) {
	inv.CurrentRuns = runs
	inv.Current = map[string][]RunWant{}
	for _, run := range runs {
		for _, im := range run.Images {
			k := ImageKey(im.Repository, im.Digest)
			for _, w := range im.WantedBy {
				inv.Current[k] = append(inv.Current[k], RunWant{run.Seq, w})
			}
		}
	}
}

// CountSelections keeps as current selections all of them (SelectionsAll, or
// "") or only the newest (SelectionsLatest); the others become NotCounted.
func (inv *Inventory) CountSelections(which string) error {
	switch which {
	case "", SelectionsAll:
		return nil
	case SelectionsLatest:
		if n := len(inv.CurrentRuns); n > 1 {
			runs := slices.Clone(inv.CurrentRuns)
			sort.Slice(runs, func(i, j int) bool { return runs[i].Seq < runs[j].Seq })
			for _, r := range runs[:n-1] {
				inv.NotCounted = append(inv.NotCounted, NotCounted{Run: r, Why: "older than the latest selection (--selections latest)"})
			}
			inv.countOnly(runs[n-1:])
		}
		return nil
	}
	return fmt.Errorf("--selections %q: use %s (the latest run of every configuration file not retired) or %s (only the newest of them)", which, SelectionsAll, SelectionsLatest)
}

// NotCounted is a selection delete --stale does not count, and why.
type NotCounted struct {
	Run HistoryRun
	Why string
}

// Describe is "run 7 (/path/isc.yaml, 2026-11-02)".
func describeRun(r HistoryRun) string {
	return fmt.Sprintf("run %d (%s, %s)", r.Seq, r.ConfigPath, r.Time.UTC().Format("2006-01-02"))
}

// SelectionLines say which selections are counted and which are not.
func (inv *Inventory) SelectionLines() (counted, notCounted []string) {
	for _, r := range inv.CurrentRuns {
		counted = append(counted, describeRun(r))
	}
	for _, n := range inv.NotCounted {
		notCounted = append(notCounted, describeRun(n.Run)+": "+n.Why)
	}
	return counted, notCounted
}
