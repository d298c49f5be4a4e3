package pipeline

import (
	"fmt"
	"time"

	"github.com/airlock-mirror/airlock/workspace"
)

// writePinned writes the run's configuration pinned by digest (complete runs
// that copied or archived; not dry runs, sharded runs, or the earlier batches of
// --from TARGET). Failing to is a warning: what was mirrored stays mirrored.
func (r *run) writePinned() {
	o := r.opts
	if r.res.Plan == nil || r.res.Failed > 0 || r.res.Interrupted || o.DryRun || o.PlanOnly || o.PlanFile != "" || o.batchConfig != nil {
		return
	}
	now := time.Now()
	header := fmt.Sprintf("%s, pinned by airlock after its %s run at %s:\nevery catalog and additional image is pinned by digest, so that mirroring with this file selects exactly the same images.", o.ConfigPath, r.workflow, now.UTC().Format(time.RFC3339))
	p, err := workspace.WritePinned(r.workDir, r.cfg, header, r.res.Plan, r.wants, now)
	if err != nil {
		w := fmt.Sprintf("no pinned configuration written: %v", err)
		r.log.Warn(w)
		r.res.Warnings = append(r.res.Warnings, w)
	}
	r.res.PinnedConfig = p
}
