package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
)

// BatchToLoad is one batch of a mirror-to-disk target that disk-to-mirror loads.
type BatchToLoad struct {
	Ref archive.BatchRef
	// Dir is the batch folder.
	Dir string
	// Config is the configuration the batch was made with, as its archive
	// manifest records it (nil when it records none).
	Config *imageset.ImageSetConfiguration
	// Last is the newest batch of the target.
	Last bool

	manifest *archive.Manifest
}

// BatchLoadPlan says which batches of a target disk-to-mirror loads into a
// destination, and which it skips because the destination has them.
type BatchLoadPlan struct {
	// Load are the batches to load, in order (at least the newest one: loading
	// a batch again is harmless, and it puts its cluster resources back).
	Load []BatchToLoad `json:"-"`
	// Loaded are the batches of the target the record says dest has.
	Loaded []archive.BatchRef `json:"loaded,omitempty"`
	// Skipped are older batches of the target that were never loaded into
	// dest but are superseded by a newer one that was (loading them now would
	// set the catalogs back).
	Skipped []archive.BatchRef `json:"skipped,omitempty"`
	// AtDestination are batches this workspace did not record loading whose
	// catalogs, or a newer batch's, the registry holds at their tags
	// (AskRegistry).
	AtDestination []archive.BatchRef `json:"atDestination,omitempty"`
	// Target is the folder of batches.
	Target string `json:"target"`
	// Done are the batches loaded before the newest, with what each copied.
	Done []BatchDone `json:"done,omitempty"`
	// Newest is the batch loaded last (the run's summary describes it).
	Newest archive.BatchRef `json:"newest"`
}

// BatchDone is one batch loaded before the newest.
type BatchDone struct {
	Batch archive.BatchRef `json:"batch"`
	// Images were planned, Copied sent, Present already at the destination.
	Images, Copied, Present int
}

// WriteSummary says which batches of the target were loaded before the newest,
// and which were not loaded and why, for the run's summary.
func (p *BatchLoadPlan) WriteSummary(w io.Writer) {
	if p == nil {
		return
	}
	for _, r := range p.Loaded {
		fmt.Fprintf(w, "  batch:     %s was loaded by an earlier command\n", r)
	}
	for _, r := range p.Skipped {
		fmt.Fprintf(w, "  batch:     %s skipped: a newer batch was loaded already\n", r)
	}
	for _, r := range p.AtDestination {
		fmt.Fprintf(w, "  batch:     %s skipped: the registry holds its catalogs or newer ones (loaded through another workspace)\n", r)
	}
	for _, d := range p.Done {
		fmt.Fprintf(w, "  batch:     %s loaded: %d images, %d copied, %d already there\n", d.Batch, d.Images, d.Copied, d.Present)
	}
	fmt.Fprintf(w, "  batch:     %s loaded, the newest of %s: the lines below are its own\n", p.Newest, p.Target)
}

// AskRegistry leaves out of Load the batches the destination registry shows it
// holds already, though this workspace did not record loading them (loaded
// through another workspace): those before the newest batch whose catalogs it
// holds at their tags (catalogsAt), and before the batches pushing the same
// catalogs as that one. Loading them again would set the catalog tags back to
// older catalogs on the way. The batches that stay are checked as always: what
// they rely on must be at the destination.
func (p *BatchLoadPlan) AskRegistry(catalogsAt func(*archive.Manifest) (bool, error)) error {
	first := -1
	for i := len(p.Load) - 1; i > 0; i-- {
		ok, err := catalogsAt(p.Load[i].manifest)
		if err != nil {
			return err
		}
		if ok {
			first = i
		} else if first >= 0 {
			break
		}
	}
	for _, b := range p.Load[:max(first, 0)] {
		p.AtDestination = append(p.AtDestination, b.Ref)
	}
	p.Load = p.Load[max(first, 0):]
	return nil
}

// ErrBatchMissing means a batch that a batch of the target builds on is neither
// in the target nor loaded into the destination.
var ErrBatchMissing = errors.New("a batch it builds on is missing")

// DiskToMirrorDir is disk-to-mirror's workspace folder (absolute) for the
// --workspace location ws: DefaultName in the current directory when it is
// the zero Location. The archive from (--from) may be on read-only media:
// nothing is written into it, and a workspace inside it is refused.
func DiskToMirrorDir(ws, from location.Location) (string, error) {
	dir := DefaultName
	if !ws.IsZero() {
		var err error
		if dir, err = WorkspaceDir(ws); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if from.IsZero() {
		return abs, nil
	}
	arch, err := filepath.Abs(from.Path)
	if rel, rerr := filepath.Rel(arch, abs); err == nil && rerr == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("--workspace %s is inside the archive folder %s: disk-to-mirror writes nothing into the archive (it may be read-only media); choose another folder", abs, from.Path)
	}
	return abs, nil
}

// PlanBatchLoad plans loading the folder from (--from) into dest
// (REGISTRY[:PORT]/NAMESPACE) with disk-to-mirror's --workspace location ws
// (BatchesToLoad of its record). ok is false when from is not a folder of
// batches.
func PlanBatchLoad(from, ws location.Location, dest string) (plan *BatchLoadPlan, ok bool, err error) {
	target := from.Path
	if fi, serr := os.Stat(target); !from.Is(location.SchemeFile) || serr != nil || !fi.IsDir() {
		return nil, false, nil // the run says what is wrong
	}
	dir, err := DiskToMirrorDir(ws, from)
	if err != nil {
		return nil, false, err
	}
	rec, err := ReadLoaded(At(dir))
	if err != nil {
		return nil, false, err
	}
	plan, ok, err = rec.BatchesToLoad(target, dest)
	if err != nil {
		err = fmt.Errorf("--from %s: %w", target, err)
	}
	return plan, ok, err
}

// BatchesToLoad plans loading the mirror-to-disk target (a folder of
// batch-NNNN folders) into dest: every finished batch after the newest one this
// record says dest holds, in order. A hole in the carried sequence is an error
// naming the missing batch (checkBuildsOn). ok is false when target is not a
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
		bl := BatchToLoad{Ref: archive.BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID, Dir: b.Dir}, Dir: b.Dir, manifest: m}
		if len(m.Config) > 0 {
			bl.Config = &imageset.ImageSetConfiguration{}
			if err := json.Unmarshal(m.Config, bl.Config); err != nil {
				return nil, true, fmt.Errorf("%s: the configuration its archive records: %w", bl.Ref, err)
			}
		}
		all = append(all, bl)
		if err := checkBuildsOn(m, all[:len(all)-1], rec, dest, target); err != nil {
			return nil, true, err
		}
	}
	if len(all) == 0 {
		return nil, false, nil // Open says what is wrong
	}
	all[len(all)-1].Last = true
	plan = &BatchLoadPlan{Target: target}
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

// checkBuildsOn refuses a hole in the target: a batch m builds on that is
// neither loaded into dest nor in the target (before) although an older batch of
// the same sequence is. Batches older than everything the target holds may have
// been loaded through another workspace: the registry says (disk-to-mirror
// checks that it holds what the batch relies on).
func checkBuildsOn(m *archive.Manifest, before []BatchToLoad, rec *Loaded, dest, target string) error {
	this := archive.BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID}
	inTarget := func(id string) bool {
		return slices.ContainsFunc(before, func(b BatchToLoad) bool { return b.Ref.ArchiveID == id })
	}
	for _, on := range m.BuildsOn {
		if rec.LoadedInto(on.ArchiveID, dest) || inTarget(on.ArchiveID) {
			continue
		}
		for _, older := range m.BuildsOn {
			if older.Batch < on.Batch && inTarget(older.ArchiveID) {
				return fmt.Errorf("%w: %s builds on %s, which %s does not hold (it holds the older %s) and %s has not loaded (recorded in %s): carry that batch across too, or, if it was loaded through another workspace, load the batches after it by name (--from file://%s/%s)", ErrBatchMissing, this, on, target, older, dest, rec.path, target, archive.BatchName(m.Batch))
			}
		}
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
