package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// KeepLogs is how many run logs a working directory keeps: opening a new one
// removes the oldest beyond it.
const KeepLogs = 20

const runLogPrefix, runLogExt = "airlock-", ".log"

// NewRunLog creates the log file of a run starting at t in LogsDir
// (airlock-TIME-PID.log: runs of shards at the same second do not collide)
// and removes the oldest logs so that KeepLogs remain. The caller closes it.
func (d Dir) NewRunLog(t time.Time) (*os.File, error) {
	dir := d.LogsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the logs folder: %w", err)
	}
	name := fmt.Sprintf("%s%s-%d%s", runLogPrefix, t.UTC().Format(pinnedTimeLayout), os.Getpid(), runLogExt)
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the run log: %w", err)
	}
	pruneRunLogs(dir, name)
	return f, nil
}

// pruneRunLogs removes the oldest run logs of dir beyond KeepLogs, never
// current. Names sort by time.
func pruneRunLogs(dir, current string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var logs []string
	for _, e := range ents {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, runLogPrefix) && strings.HasSuffix(n, runLogExt) {
			logs = append(logs, n)
		}
	}
	slices.Sort(logs)
	for len(logs) > KeepLogs {
		if logs[0] != current {
			_ = os.Remove(filepath.Join(dir, logs[0]))
		}
		logs = logs[1:]
	}
}
