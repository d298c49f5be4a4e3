package workspace

import (
	"errors"
	"fmt"
	"io/fs"
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
// (airlock-TIME-PID.log: runs of shards at the same second do not collide;
// a second run of one process in the same second gets airlock-TIME-PID_02.log)
// and removes the oldest logs so that KeepLogs remain. The caller closes it.
func (d Dir) NewRunLog(t time.Time) (*os.File, error) {
	dir := d.LogsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the logs folder: %w", err)
	}
	base := fmt.Sprintf("%s%s-%d", runLogPrefix, t.UTC().Format(pinnedTimeLayout), os.Getpid())
	for n := 1; ; n++ {
		name := base + runLogExt
		if n > 1 { // a second command of this process in the same second
			name = fmt.Sprintf("%s_%02d%s", base, n, runLogExt) // sorts after base.log
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
		if errors.Is(err, fs.ErrExist) && n < 100 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create the run log: %w", err)
		}
		pruneRunLogs(dir, name)
		return f, nil
	}
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
