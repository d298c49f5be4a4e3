package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/airlock-mirror/airlock/mirror/archive"
)

// loadedFileName is the disk-to-mirror workspace's record of the archives it
// loaded, by destination.
const loadedFileName = "loaded.json"

// loadedBatch is one archive disk-to-mirror finished loading.
type loadedBatch struct {
	Destination string             `json:"destination"`
	ArchiveID   string             `json:"archiveID"`
	Batch       int                `json:"batch,omitempty"`
	BuildsOn    []archive.BatchRef `json:"buildsOn,omitempty"`
	Dir         string             `json:"dir"`
}

type loadedRecord struct {
	path    string
	Batches []loadedBatch `json:"batches"`
}

func loadRecord(workDir string) (*loadedRecord, error) {
	rec := &loadedRecord{path: filepath.Join(workDir, loadedFileName)}
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
	return rec, nil
}

func ref(l loadedBatch) archive.BatchRef {
	return archive.BatchRef{Batch: l.Batch, ArchiveID: l.ArchiveID}
}

// checkOrder refuses to load an archive into dest when a later batch built on it
// was already loaded there: its catalog tags would go back to an older catalog.
func (rec *loadedRecord) checkOrder(m *archive.Manifest, dest string) error {
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

// loadedInto reports whether the archive id was loaded into dest.
func (rec *loadedRecord) loadedInto(id, dest string) bool {
	return slices.ContainsFunc(rec.Batches, func(l loadedBatch) bool { return l.ArchiveID == id && l.Destination == dest })
}

// add records that archive m (from dir) was loaded into dest.
func (rec *loadedRecord) add(workDir string, m *archive.Manifest, dir, dest string) error {
	if rec.loadedInto(m.ArchiveID, dest) {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	rec.Batches = append(rec.Batches, loadedBatch{Destination: dest, ArchiveID: m.ArchiveID, Batch: m.Batch, BuildsOn: m.BuildsOn, Dir: dir})
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(rec.path, append(b, '\n'))
}
