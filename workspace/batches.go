package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/airlock-mirror/airlock/mirror/archive"
)

// BatchToLoad is one batch of a mirror-to-disk target that disk-to-mirror loads.
type BatchToLoad struct {
	Ref archive.BatchRef
	// Dir is the batch folder.
	Dir string
	// Config is the configuration the batch was made with (JSON, as the
	// archive manifest records it).
	Config json.RawMessage
	// Last is the newest batch of the target.
	Last bool
}

// BatchLoadPlan says which batches of a target disk-to-mirror loads into a
// destination, and which it skips because the destination has them.
type BatchLoadPlan struct {
	// Load are the batches to load, in order (at least the newest one: loading
	// a batch again is harmless, and it puts its cluster resources back).
	Load []BatchToLoad
	// Loaded are the batches of the target the record says dest has.
	Loaded []archive.BatchRef
	// Skipped are older batches of the target that were never loaded into
	// dest but are superseded by a newer one that was (loading them now would
	// set the catalogs back).
	Skipped []archive.BatchRef
}

// ErrBatchMissing means a batch that a batch of the target builds on is neither
// in the target nor loaded into the destination.
var ErrBatchMissing = errors.New("a batch it builds on is missing")

// BatchesToLoad plans loading the mirror-to-disk target (a folder of
// batch-NNNN folders) into dest: every finished batch after the newest one this
// record says dest holds, in order. A batch that builds on one that is neither in
// the target nor loaded into dest (a folder left behind, batches of two
// different sequences) is an error naming it. ok is false when target is not a
// folder of batches (an archive folder itself, or a batch folder): it is loaded
// as one archive.
func (rec *Loaded) BatchesToLoad(target, dest string) (plan *BatchLoadPlan, ok bool, err error) {
	bs, err := archive.Batches(target)
	if err != nil || len(bs) == 0 {
		return nil, false, err
	}
	var all []BatchToLoad
	for _, b := range bs {
		if !b.Finished {
			// An interrupted mirror-to-disk run: the next run finishes it.
			continue
		}
		m, err := readManifest(b.Dir)
		if err != nil {
			return nil, true, err
		}
		all = append(all, BatchToLoad{Ref: archive.BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID, Dir: b.Dir}, Dir: b.Dir, Config: m.Config})
		if err := checkBuildsOn(m, all[:len(all)-1], rec, dest, target); err != nil {
			return nil, true, err
		}
	}
	if len(all) == 0 {
		return nil, false, nil // Open says what is wrong
	}
	all[len(all)-1].Last = true
	plan = &BatchLoadPlan{}
	newest := -1
	for i, b := range all {
		if rec.LoadedInto(b.Ref.ArchiveID, dest) {
			newest = i
		}
	}
	for i, b := range all {
		switch {
		case i > newest:
			plan.Load = append(plan.Load, b)
		case rec.LoadedInto(b.Ref.ArchiveID, dest):
			plan.Loaded = append(plan.Loaded, b.Ref)
		default:
			plan.Skipped = append(plan.Skipped, b.Ref)
		}
	}
	if len(plan.Load) == 0 {
		// Everything was loaded: the newest batch again (nothing is sent
		// twice; its cluster resources are written again).
		plan.Loaded = plan.Loaded[:len(plan.Loaded)-1]
		plan.Load = all[len(all)-1:]
	}
	return plan, true, nil
}

// checkBuildsOn checks that every batch m builds on is an earlier batch of the
// target (before) or was loaded into dest.
func checkBuildsOn(m *archive.Manifest, before []BatchToLoad, rec *Loaded, dest, target string) error {
	this := archive.BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID}
	for _, on := range m.BuildsOn {
		if rec.LoadedInto(on.ArchiveID, dest) || slices.ContainsFunc(before, func(b BatchToLoad) bool { return b.Ref.ArchiveID == on.ArchiveID }) {
			continue
		}
		held := ""
		for _, b := range before {
			if on.Batch != 0 && b.Ref.Batch == on.Batch {
				held = fmt.Sprintf(" (%s holds %s, an archive of another sequence)", b.Dir, b.Ref)
			}
		}
		return fmt.Errorf("%w: %s builds on %s, which %s does not hold%s and %s has not loaded (recorded in %s): carry that batch across too and run the same command again", ErrBatchMissing, this, on, target, held, dest, rec.path)
	}
	return nil
}

func readManifest(dir string) (*archive.Manifest, error) {
	r, err := archive.Open(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ArchiveManifest(), nil
}
