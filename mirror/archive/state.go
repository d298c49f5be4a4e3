package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// ShippedSet is the set of blobs that earlier archives carried, each with the
// archive that shipped it. A Writer given a ShippedSet does not write those blobs.
type ShippedSet map[digest.Digest]Origin

// State is the workspace state file: which blobs earlier archives shipped. The next
// mirror-to-disk ships only blobs that are not in it.
type State struct {
	path string
	// Archives are the archives recorded, oldest first.
	Archives []StateArchive `json:"archives"`
	// Blobs maps every shipped blob to the archive that shipped it first.
	Blobs map[digest.Digest]StateBlob `json:"blobs"`
}

// StateArchive is one archive recorded in the state.
type StateArchive struct {
	ID string `json:"id"`
	// Batch is the archive's batch number in its target (0: none).
	Batch int    `json:"batch,omitempty"`
	Dir   string `json:"dir,omitempty"`
	Blobs int    `json:"blobs"`
	Bytes int64  `json:"bytes"`
	// Time is when the archive was recorded (zero in states written before
	// airlock kept it: such archives count as older than any --since date).
	Time time.Time `json:"time,omitzero"`
}

// StateBlob is one shipped blob.
type StateBlob struct {
	ArchiveID string   `json:"archiveID"`
	Repos     []string `json:"repos,omitempty"`
}

const stateVersion = 1

type stateFile struct {
	Version  int                         `json:"version"`
	Archives []StateArchive              `json:"archives"`
	Blobs    map[digest.Digest]StateBlob `json:"blobs"`
}

// LoadState reads the state file at path; a missing file is an empty state.
func LoadState(path string) (*State, error) {
	s := &State{path: path, Blobs: map[digest.Digest]StateBlob{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read archive state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("archive state %s is not valid JSON: %w; remove it and use --full to ship everything", path, err)
	}
	if f.Version != stateVersion {
		return nil, fmt.Errorf("archive state %s has version %d, this airlock reads version %d; remove it and use --full", path, f.Version, stateVersion)
	}
	for d := range f.Blobs {
		if err := validDigest(d); err != nil {
			return nil, fmt.Errorf("archive state %s: %w; remove it and use --full", path, err)
		}
	}
	s.Archives = f.Archives
	if f.Blobs != nil {
		s.Blobs = f.Blobs
	}
	return s, nil
}

// Shipped returns the blobs earlier archives shipped, with the archive that did.
func (s *State) Shipped() ShippedSet {
	dirs := map[string]string{}
	for _, a := range s.Archives {
		dirs[a.ID] = a.Dir
	}
	out := make(ShippedSet, len(s.Blobs))
	for d, b := range s.Blobs {
		out[d] = Origin{ArchiveID: b.ArchiveID, Archive: dirs[b.ArchiveID], Repos: b.Repos}
	}
	return out
}

// Record adds the blobs archive m (written to dir) shipped, and saves the state.
// Recording the same archive twice is a no-op.
func (s *State) Record(m *Manifest, dir string) error {
	for _, a := range s.Archives {
		if a.ID == m.ArchiveID {
			return nil
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	s.Archives = append(s.Archives, StateArchive{ID: m.ArchiveID, Batch: m.Batch, Dir: dir, Blobs: len(m.Blobs), Bytes: m.TotalBlobBytes(), Time: time.Now().UTC()})
	for _, b := range m.Blobs {
		if _, ok := s.Blobs[b.Digest]; !ok {
			s.Blobs[b.Digest] = StateBlob{ArchiveID: m.ArchiveID, Repos: b.Repos}
		}
	}
	return s.Save()
}

// Save writes the state file atomically.
func (s *State) Save() error {
	if s.path == "" {
		return errors.New("archive state has no file path")
	}
	archives := append([]StateArchive(nil), s.Archives...)
	b, err := json.MarshalIndent(stateFile{Version: stateVersion, Archives: archives, Blobs: s.Blobs}, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("write archive state: %w", err)
	}
	return writeFileAtomic(s.path, append(b, '\n'))
}

// BuildsOn returns the archives recorded, oldest first, as the batches the next
// incremental archive builds on.
func (s *State) BuildsOn() []BatchRef {
	out := make([]BatchRef, 0, len(s.Archives))
	for _, a := range s.Archives {
		out = append(out, BatchRef{Batch: a.Batch, ArchiveID: a.ID, Dir: a.Dir})
	}
	return out
}

// ShippedBefore is Shipped and BuildsOn restricted to the archives recorded
// before t (--since DATE): the next archive ships what those did not carry,
// so it holds everything that changed since t.
func (s *State) ShippedBefore(t time.Time) (ShippedSet, []BatchRef) {
	before := map[string]bool{}
	var on []BatchRef
	for _, a := range s.Archives {
		if a.Time.Before(t) {
			before[a.ID] = true
			on = append(on, BatchRef{Batch: a.Batch, ArchiveID: a.ID, Dir: a.Dir})
		}
	}
	out := ShippedSet{}
	for d, o := range s.Shipped() {
		if before[o.ArchiveID] {
			out[d] = o
		}
	}
	return out, on
}

// SinceArchive returns the blobs the archive in dir carried or relied on, for
// --since-archive DIR: the next archive ships only what that one did not. The
// batches it returns are that archive's and those it builds on, oldest first.
func SinceArchive(dir string) (ShippedSet, []BatchRef, error) {
	dir, err := ResolveLatest(dir)
	if err != nil {
		return nil, nil, err
	}
	r, err := Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	m := r.ArchiveManifest()
	out := ShippedSet{}
	abs, _ := filepath.Abs(dir)
	for _, b := range m.Blobs {
		out[b.Digest] = Origin{ArchiveID: m.ArchiveID, Archive: abs, Repos: b.Repos}
	}
	for _, b := range m.ReliesOn {
		if _, ok := out[b.Digest]; !ok {
			out[b.Digest] = b.Origin
		}
	}
	on := append(slices.Clone(m.BuildsOn), BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID, Dir: abs})
	return out, on, nil
}

// BlobExists reports whether an earlier archive shipped blob d (for a dry run's
// estimate of what the next archive would carry).
func (s ShippedSet) BlobExists(_ context.Context, _ string, d endpoint.Descriptor) (bool, error) {
	_, ok := s[d.Digest]
	return ok, nil
}

// ManifestExists is always false: every archive carries the manifests of its images.
func (s ShippedSet) ManifestExists(context.Context, string, string, digest.Digest) (bool, error) {
	return false, nil
}
