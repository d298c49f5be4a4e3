package pipeline

import (
	"sync"
	"time"

	"github.com/airlock-mirror/airlock/workspace"
)

// writeRecords writes what a run leaves in the working directory once its
// workflow is over: results.json, the history record, the pinned
// configuration and the report. runErr is the workflow's error; the error
// returned is the run's (runErr, else the first record that could not be
// written).
//
// They are written side by side, with what a mirror-to-mirror workflow left
// running (plan.json and mapping.txt, waited for first; the cluster
// resources, which results.json names). They are independent of each other
// but for the run's error, which the report shows: the report is rendered
// with the error known when the records start, and rendered again in the
// rare case the cluster resources or a record failed (which changes the
// run's error). Each reads the run and changes nothing another reads.
func (r *run) writeRecords(runErr error) error {
	if _, werr := r.planFiles.wait(); werr != nil && runErr == nil {
		runErr = werr
	}
	if serr := r.settleCatalogs(); serr != nil && runErr == nil {
		runErr = serr
	}
	err := runErr
	if r.res.Plan == nil {
		if werr := r.writeReport(err); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	r.outcomes()
	var clusterErr, resErr, histErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		// results.json names the cluster resources' files.
		_, clusterErr = r.resources.wait()
		resErr = r.saveResults()
	}()
	go func() { defer wg.Done(); histErr = r.recordHistory() }()
	rendered, rerr := r.renderReport(err)
	wg.Wait()
	for _, werr := range []error{clusterErr, resErr, histErr} {
		if werr != nil && err == nil {
			err = werr
		}
	}
	if o := r.opts; err == nil && r.res.Failed == 0 && !r.res.Interrupted && !o.Run.DryRun && !o.Run.PlanOnly && o.Run.PlanFile == "" && r.batch == nil {
		var perr error
		if r.res.PinnedConfig, perr = workspace.WritePinned(r.workDir, r.cfg, r.res.Plan.Workflow, r.pins(), time.Now()); perr != nil {
			r.log.Warn("no pinned configuration written", "error", perr)
		}
	}
	if err != runErr { // a record failed: the report says so
		rendered, rerr = r.renderReport(err)
	}
	if rerr == nil {
		rerr = r.saveReport(rendered)
	}
	if rerr != nil && err == nil {
		err = rerr
	}
	return err
}
