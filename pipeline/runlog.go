package pipeline

import (
	"time"
)

// openRunLog starts the run's log file (working-dir/logs,
// workspace.Dir.OpenRunLog): everything the run logs also goes there, every
// credential hidden. It returns what closes it.
func (r *run) openRunLog(start time.Time) func() {
	log, done := r.workDir.OpenRunLog(r.log, start, "airlock run", "workflow", r.workflow, "config", r.opts.ConfigPath)
	r.log = log
	return done
}
