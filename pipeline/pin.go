package pipeline

import (
	"fmt"
	"time"

	"github.com/airlock-mirror/airlock/workspace"
)

// writePinned writes the run's configuration pinned by digest (complete runs
// that copied or archived; not dry runs, --plan-only, shards, or the earlier
// batches of --from TARGET).
func (r *run) writePinned() (err error) {
	o := r.opts
	if r.res.Plan == nil || r.res.Failed > 0 || r.res.Interrupted || o.DryRun || o.PlanOnly || o.PlanFile != "" || o.batchConfig != nil {
		return nil
	}
	now := time.Now()
	header := fmt.Sprintf("%s, pinned by airlock after its %s run at %s:\nevery catalog and additional image is pinned by digest, so that mirroring with this file selects exactly the same images.", o.ConfigPath, r.workflow, now.UTC().Format(time.RFC3339))
	if r.res.PinnedConfig, err = workspace.WritePinned(r.workDir, r.cfg, header, r.res.Plan, r.wants, now); err != nil {
		return fmt.Errorf("pinned configuration of %s: %w", o.ConfigPath, err)
	}
	return nil
}
