package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror/archive"
)

// LoadedBatch is one archive disk-to-mirror finished loading.
type LoadedBatch struct {
	Destination string             `json:"destination"`
	ArchiveID   string             `json:"archiveID"`
	Batch       int                `json:"batch,omitempty"`
	BuildsOn    []archive.BatchRef `json:"buildsOn,omitempty"`
	Dir         string             `json:"dir"`
}

// Loaded is loaded.json: the disk-to-mirror workspace's record of the archives
// it loaded, by destination.
type Loaded struct {
	path    string
	Batches []LoadedBatch `json:"batches"`
}

// ReadLoaded reads the record of the archives loaded from d (empty when there
// is none yet).
func ReadLoaded(d Dir) (*Loaded, error) {
	rec := &Loaded{path: d.LoadedPath()}
	b, err := os.ReadFile(rec.path)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, rec); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w; remove it (it only records which archives were loaded)", rec.path, err)
	}
	for i := range rec.Batches {
		rec.Batches[i].Destination = destinationKey(rec.Batches[i].Destination)
	}
	return rec, nil
}

func ref(l LoadedBatch) archive.BatchRef {
	return archive.BatchRef{Batch: l.Batch, ArchiveID: l.ArchiveID}
}

// CheckOrder refuses to load an archive into dest when a later batch built on
// it was already loaded there: its catalog tags would go back to an older
// catalog.
func (rec *Loaded) CheckOrder(m *archive.Manifest, dest string) error {
	this := archive.BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID}
	for _, l := range rec.Batches {
		if l.Destination != dest || l.ArchiveID == m.ArchiveID {
			continue
		}
		if slices.ContainsFunc(l.BuildsOn, func(b archive.BatchRef) bool { return b.ArchiveID == m.ArchiveID }) {
			return fmt.Errorf("%s is older than %s, which was already loaded into %s (recorded in %s): loading it now would set the catalogs back to older ones; load the batches in order, each once (remove that record to force it)", this, ref(l), dest, rec.path)
		}
	}
	return nil
}

// LoadedInto reports whether the archive id was loaded into dest.
func (rec *Loaded) LoadedInto(id, dest string) bool {
	return slices.ContainsFunc(rec.Batches, func(l LoadedBatch) bool { return l.ArchiveID == id && l.Destination == dest })
}

// Add records that archive m (from dir) was loaded into dest.
func (rec *Loaded) Add(m *archive.Manifest, dir, dest string) error {
	if rec.LoadedInto(m.ArchiveID, dest) {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	rec.Batches = append(rec.Batches, LoadedBatch{Destination: dest, ArchiveID: m.ArchiveID, Batch: m.Batch, BuildsOn: m.BuildsOn, Dir: dir})
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	// The working directory exists: the run made it.
	return atomicfile.WriteFile(rec.path, append(b, '\n'), 0)
}
