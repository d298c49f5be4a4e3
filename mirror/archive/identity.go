package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
)

// ContentID computes the archive ID from what the manifest records: format,
// batch, the batches it builds on, chunk size, configuration, images,
// catalogs, the images it lacks (a partial archive), tags, every blob (digest, size, repositories; not where it lies)
// and the blobs it relies on, and the number of shards of a sharded archive.
// The same content gives the same ID, and byte-identical chunks.
//
// The writer sets ArchiveID to it; every reader (Open, so verify and
// disk-to-mirror) computes it again and refuses an archive whose recorded ID
// differs: content swapped under the ID it was announced with (blobs,
// manifests, indexes and checksums changed consistently) is caught, and an ID
// recomputed by whoever swapped it differs from the one mirror-to-disk printed.
func (m *Manifest) ContentID() (string, error) {
	on := m.BuildsOn
	if len(on) == 0 {
		on = nil // omitted from the manifest when empty: read back as nil
	}
	blobs := slices.Clone(m.Blobs)
	for i := range blobs {
		blobs[i].Chunk, blobs[i].Offset = 0, 0
	}
	src, err := json.Marshal(struct {
		F    int
		N    int
		On   []BatchRef
		Size int64
		C    json.RawMessage
		I    []ImageRecord
		Cat  []CatalogRecord
		T    []TagRecord
		B    []BlobRecord
		R    []ReliedRecord
		// S is the number of shards of a sharded archive: its chunks differ
		// from an unsharded archive's of the same content.
		S int `json:",omitempty"`
		// X are the content sources' files.
		X []ExtraRecord `json:",omitempty"`
		// Fail are the images a partial archive lacks.
		Fail []FailedRecord `json:",omitempty"`
	}{m.FormatVersion, m.Batch, on, m.ChunkSize, m.Config, m.Images, m.Catalogs, m.Tags, blobs, m.ReliesOn, m.Shards, m.Extras, m.Failed})
	if err != nil {
		return "", fmt.Errorf("archive ID: %w", err)
	}
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:16]), nil
}

// checkIdentity refuses a manifest whose recorded ID is not its content's.
func checkIdentity(m *Manifest) error {
	id, err := m.ContentID()
	if err != nil {
		return err
	}
	if id != m.ArchiveID {
		return fmt.Errorf("it records archive ID %s, but its content makes archive ID %s: the archive was altered after it was written, or is not the archive it claims to be; do not load it: get the batch again from the source side and compare its ID with the one mirror-to-disk printed", m.ArchiveID, id)
	}
	return nil
}
