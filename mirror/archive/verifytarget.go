package archive

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// BatchVerify is the verification of one archive of a folder VerifyTarget read.
type BatchVerify struct {
	// Dir is the archive folder (a batch folder, or the folder itself).
	Dir    string        `json:"dir"`
	Batch  int           `json:"batch,omitempty"`
	Report *VerifyReport `json:"report"`
}

// TargetReport is what VerifyTarget checked.
type TargetReport struct {
	Archives []BatchVerify `json:"archives"`
	// Notes are what was not verified and why: an unfinished batch, an
	// earlier batch the folder does not hold.
	Notes []string `json:"notes,omitempty"`
}

// VerifyTarget verifies the archive folder dir (Verify), or every finished batch
// of a mirror-to-disk target, in order. Every bad batch is reported, each error
// naming its batch. A batch that builds on one the folder does not hold is a
// note, not an error: the batches carried separately may be loaded already.
func VerifyTarget(ctx context.Context, dir string) (*TargetReport, error) {
	self, done, err := finishedBatches(dir)
	if err != nil {
		return nil, err
	}
	rep := &TargetReport{}
	if self || len(done) == 0 {
		vr, err := Verify(ctx, dir)
		if err != nil {
			return nil, err
		}
		rep.Archives = append(rep.Archives, BatchVerify{Dir: dir, Report: vr})
		return rep, nil
	}
	all, err := Batches(dir)
	if err != nil {
		return nil, err
	}
	for _, b := range all {
		if !b.Finished {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s is unfinished (a mirror-to-disk run was interrupted; running it again finishes it): not verified", b.Dir))
		}
	}
	var errs []error
	ids := map[string]bool{}
	for _, d := range done {
		vr, err := Verify(ctx, d)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:\n%w", d, err))
			continue
		}
		n, _ := BatchNumber(filepath.Base(d))
		rep.Archives = append(rep.Archives, BatchVerify{Dir: d, Batch: n, Report: vr})
		ids[vr.ArchiveID] = true
		r, err := Open(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, on := range r.ArchiveManifest().BuildsOn {
			if !ids[on.ArchiveID] {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s builds on %s, which this folder does not hold before it: the destination must have loaded it first", d, on))
			}
		}
		r.Close()
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(rep.Archives, func(a, b BatchVerify) int { return a.Batch - b.Batch })
	return rep, nil
}
