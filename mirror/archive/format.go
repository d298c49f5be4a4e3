// Package archive writes, reads and verifies airlock's mirror-to-disk archives: a
// directory of uncompressed tar chunks airlock_000001.tar, airlock_000002.tar, …
// split at blob boundaries. Each chunk holds blobs under blobs/sha256/<hex>, followed
// by airlock/index.json (what the chunk holds, at which offsets, and the SHA-256 of
// the chunk's blob region), so that a chunk can be verified on its own. The first
// and the last chunk also hold airlock/manifest.json, the archive manifest: format
// version, configuration, plan (images, catalogs, tags), every blob with its chunk
// and offset, the blobs the archive relies on from earlier archives, and every
// chunk's SHA-256.
//
// The Writer implements endpoint.Destination (mirror-to-disk), the Reader implements
// endpoint.Source (disk-to-mirror) and streams blobs straight out of the chunks,
// verifying their digests. See docs/archive.md for the format and its guarantees.
// It knows no registry and no file-based catalog: images are manifests and blobs.
package archive

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// FormatVersion is the version of the archive format this package writes and reads.
const FormatVersion = 1

const (
	chunkPrefix   = "airlock_"
	chunkSuffix   = ".tar"
	blobPrefix    = "blobs/sha256/"
	indexName     = "airlock/index.json"
	manifestName  = "airlock/manifest.json"
	manifestSum   = "airlock/manifest.json.sha256"
	blockSize     = 512
	eofSize       = 2 * blockSize
	manifestKind  = "AirlockArchive"
	indexKind     = "AirlockChunk"
	maxIndexSize  = 256 << 20 // an index or manifest larger than this is rejected
	maxChunkCount = 999999
)

// DefaultChunkSize is the default maximum chunk size: 500 GiB, oc-mirror's archiveSize default.
const DefaultChunkSize int64 = 500 << 30

// Sentinel errors; errors returned by this package wrap them where they apply.
var (
	// ErrCorrupt means a chunk or blob does not match what the archive records.
	ErrCorrupt = errors.New("archive is corrupt")
	// ErrNotFound means the archive holds no such manifest, tag or blob.
	ErrNotFound = errors.New("not found in archive")
	// ErrUnfinished means a batch folder holds only the staging area of a
	// mirror-to-disk run that did not finish.
	ErrUnfinished = errors.New("the batch is unfinished")
	// ErrReliedOn means the blob is not in this archive: an earlier archive shipped it.
	ErrReliedOn = errors.New("blob was shipped by an earlier archive")
	// ErrArchiveExists means the directory already holds a finished archive.
	ErrArchiveExists = errors.New("directory already holds an archive")
	// ErrBaseMissing means the destination lacks blobs an incremental archive relies on.
	ErrBaseMissing = errors.New("destination lacks blobs shipped by an earlier archive")
	// ErrFinished means the Writer was already finished.
	ErrFinished = errors.New("archive writer already finished")
)

var fixedModTime = time.Unix(0, 0)

// ChunkName returns the file name of chunk n (1-based): airlock_000001.tar.
func ChunkName(n int) string { return fmt.Sprintf("%s%06d%s", chunkPrefix, n, chunkSuffix) }

var chunkNameRE = regexp.MustCompile(`^airlock_([0-9]{6})\.tar$`)

// chunkNumber parses a chunk file name; ok is false for other names.
func chunkNumber(name string) (int, bool) { return numberIn(chunkNameRE, name) }

// numberIn returns the positive number re's first group matches in name.
func numberIn(re *regexp.Regexp, name string) (int, bool) {
	m := re.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// ImageRecord is one image of the plan, as the orchestrator resolved it.
type ImageRecord struct {
	// Source is the source reference the user asked for (tag or digest form).
	Source string `json:"source"`
	// Digest is the digest of the top manifest (index or image manifest) stored.
	Digest digest.Digest `json:"digest"`
	// Destination is the destination repository path (no registry host).
	Destination string `json:"destination"`
	// Tags are the tags the manifest gets in Destination.
	Tags []string `json:"tags,omitempty"`
	// MediaType of the top manifest.
	MediaType string `json:"mediaType,omitempty"`
	// Platforms kept, as os/arch[/variant]; empty means every platform.
	Platforms []string `json:"platforms,omitempty"`
	// Kind says where the image came from: "operator", "bundle", "catalog", "additional"...
	Kind string `json:"kind,omitempty"`
	// Origins are the catalogs (or "additionalImages") that asked for the image,
	// so that disk-to-mirror can push the subset a configuration names.
	Origins []string `json:"origins,omitempty"`
	// Attachment is set on signatures, attestations, SBOMs and referrers of
	// another image of the archive (Kind "attachment"); Signature ("signed",
	// "unsigned") and Attachments are set on the images they belong to.
	Attachment  *oci.Attachment `json:"attachment,omitempty"`
	Signature   string          `json:"signature,omitempty"`
	Attachments int             `json:"attachments,omitempty"`
	// Built says a content source built the image (mirror.PlanImage.Built):
	// no mirror rule names it.
	Built bool `json:"built,omitempty"`
}

// CatalogRecord is one pruned operator catalog.
type CatalogRecord struct {
	// Source is the catalog image reference from the configuration.
	Source string `json:"source"`
	// SourceDigest is the digest of the original catalog image.
	SourceDigest digest.Digest `json:"sourceDigest,omitempty"`
	// Destination is the repository path of the rebuilt (pruned) catalog.
	Destination string `json:"destination"`
	// Digest is the digest of the rebuilt catalog image.
	Digest digest.Digest `json:"digest,omitempty"`
	// Tag of the rebuilt catalog in Destination.
	Tag string `json:"tag,omitempty"`
	// Packages kept in the pruned catalog.
	Packages []string `json:"packages,omitempty"`
	// Rebuilt is false when the catalog was mirrored untouched (full: true, no packages).
	Rebuilt   bool     `json:"rebuilt,omitempty"`
	Platforms []string `json:"platforms,omitempty"` // the catalog image's platform subset, as ImageRecord's
}

// ExtraRecord is a file a content source needs on the far side besides its
// images (an update graph, say), carried in the archive's manifest.
type ExtraRecord struct {
	// Source names the content source that wrote it; Name is its name there.
	Source string `json:"source"`
	Name   string `json:"name"`
	Data   []byte `json:"data"`
}

// FailedRecord is an image the run that wrote the archive asked for but could
// not get: the archive lacks it, and the run's configuration still wants it.
// Disk-to-mirror reports it as missing; the next mirror-to-disk carries it.
type FailedRecord struct {
	// Source is the image as the configuration names it; Destination its
	// repository in the archive (relocated at the destination as every image's).
	Source      string `json:"source"`
	Destination string `json:"destination,omitempty"`
	// Kind and Origins are the plan's, so that disk-to-mirror's sources can
	// tell whether they still want it.
	Kind    string   `json:"kind,omitempty"`
	Origins []string `json:"origins,omitempty"`
	// Attachment is set for a signature or other attachment of an image.
	Attachment *oci.Attachment `json:"attachment,omitempty"`
	// Error says why it failed; Transient is set when running the same
	// command again may succeed (a network failure, a 5xx, a timeout).
	Error     string `json:"error"`
	Transient bool   `json:"transient,omitempty"`
}

// maxExtraBytes bounds the files content sources carry in the manifest.
const maxExtraBytes = 16 << 20

// Meta is what the orchestrator tells Finish about the run: the configuration it
// used and the plan.
type Meta struct {
	// Batch is the number of this archive in its target's sequence of batches
	// (0: not part of a sequence).
	Batch int `json:"batch,omitempty"`
	// BuildsOn are the earlier batches whose blobs this archive does not ship
	// again, oldest first: they must be loaded before it.
	BuildsOn []BatchRef      `json:"buildsOn,omitempty"`
	Config   json.RawMessage `json:"config,omitempty"`
	Images   []ImageRecord   `json:"images,omitempty"`
	Catalogs []CatalogRecord `json:"catalogs,omitempty"`
	// Extras are the files content sources carry to the far side.
	Extras []ExtraRecord `json:"extras,omitempty"`
	// Failed are the images the run asked for but could not get.
	Failed []FailedRecord `json:"failed,omitempty"`
}

// TagRecord says that the manifest Digest is stored in Repo under Reference (a tag
// or the digest itself).
type TagRecord struct {
	Repo      string        `json:"repo"`
	Reference string        `json:"reference"`
	Digest    digest.Digest `json:"digest"`
	MediaType string        `json:"mediaType,omitempty"`
}

// BlobRecord is one blob stored in the archive (layers, configs and manifests alike).
type BlobRecord struct {
	Digest digest.Digest `json:"digest"`
	Size   int64         `json:"size"`
	// Chunk is the 1-based number of the chunk holding the blob.
	Chunk int `json:"chunk"`
	// Offset is where the blob's bytes start in the chunk file.
	Offset int64 `json:"offset"`
	// Repos are the destination repositories that use the blob.
	Repos []string `json:"repos,omitempty"`
}

// Origin names the archive that shipped a blob.
type Origin struct {
	ArchiveID string `json:"archiveID"`
	// Archive is the directory the archive was written to.
	Archive string `json:"archive,omitempty"`
	// Repos are the repositories that archive put the blob into.
	Repos []string `json:"repos,omitempty"`
}

// ReliedRecord is a blob an image of this archive needs but that an earlier archive
// shipped: the destination must already hold it.
type ReliedRecord struct {
	Digest digest.Digest `json:"digest"`
	Size   int64         `json:"size"`
	// Repos are the repositories of this archive that need the blob.
	Repos []string `json:"repos,omitempty"`
	// Origin is the earlier archive that shipped it.
	Origin Origin `json:"origin"`
}

// ChunkRecord describes one chunk file.
type ChunkRecord struct {
	Name   string `json:"name"`
	Number int    `json:"number"`
	Blobs  int    `json:"blobs"`
	// PayloadSize is the length of the blob region (everything before the index entry).
	PayloadSize int64 `json:"payloadSize"`
	// PayloadSHA256 is the SHA-256 of the blob region, bytes [0, PayloadSize).
	PayloadSHA256 string `json:"payloadSHA256"`
	// IndexSHA256 is the SHA-256 of the chunk's airlock/index.json.
	IndexSHA256 string `json:"indexSHA256"`
}

// Manifest is the archive manifest, airlock/manifest.json.
type Manifest struct {
	Kind          string `json:"kind"`
	FormatVersion int    `json:"formatVersion"`
	ArchiveID     string `json:"archiveID"`
	// Batch is the archive's number in its target's sequence (see BatchName).
	Batch int `json:"batch,omitempty"`
	// BuildsOn are the earlier batches this one relies on, oldest first.
	BuildsOn  []BatchRef      `json:"buildsOn,omitempty"`
	ChunkSize int64           `json:"chunkSize"`
	Config    json.RawMessage `json:"config,omitempty"`
	Images    []ImageRecord   `json:"images"`
	Catalogs  []CatalogRecord `json:"catalogs"`
	// Extras are the files content sources carry to the far side (Meta.Extras).
	Extras []ExtraRecord `json:"extras,omitempty"`
	// Failed are the images the run asked for but could not get: the archive
	// is partial (Meta.Failed).
	Failed   []FailedRecord `json:"failed,omitempty"`
	Tags     []TagRecord    `json:"tags"`
	Blobs    []BlobRecord   `json:"blobs"`
	ReliesOn []ReliedRecord `json:"reliesOn"`
	Chunks   []ChunkRecord  `json:"chunks"`
	// Shards is the number of shards a sharded archive was assembled from
	// (0: not sharded); it is part of the archive ID.
	Shards int `json:"shards,omitempty"`
}

// TotalBlobBytes is the sum of the sizes of the blobs stored in the archive.
func (m *Manifest) TotalBlobBytes() int64 {
	var n int64
	for _, b := range m.Blobs {
		n += b.Size
	}
	return n
}

// IndexBlob is one blob of a chunk index.
type IndexBlob struct {
	Digest digest.Digest `json:"digest"`
	Size   int64         `json:"size"`
	Offset int64         `json:"offset"`
}

// ChunkIndex is airlock/index.json, the self-description of one chunk.
type ChunkIndex struct {
	Kind          string      `json:"kind"`
	FormatVersion int         `json:"formatVersion"`
	ArchiveID     string      `json:"archiveID"`
	Chunk         int         `json:"chunk"`
	PayloadSize   int64       `json:"payloadSize"`
	PayloadSHA256 string      `json:"payloadSHA256"`
	Blobs         []IndexBlob `json:"blobs"`
}

// headerBytes returns the canonical tar header block(s) of a regular file entry.
// Every entry airlock writes uses exactly these bytes, and readers reject any other.
func headerBytes(name string, size int64) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Size:     size,
		Mode:     0o644,
		ModTime:  fixedModTime,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("tar header for %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// padding returns the number of zero bytes after size bytes of data.
func padding(size int64) int64 { return (blockSize - size%blockSize) % blockSize }

// blobEntryName is the tar name of blob d.
func blobEntryName(d digest.Digest) string { return blobPrefix + d.Encoded() }

// marshal encodes v as compact JSON followed by a newline (deterministic: struct
// field order, sorted slices prepared by the caller).
func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// validDigest checks that d is a well-formed sha256 digest.
func validDigest(d digest.Digest) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("invalid digest %q: %w", d, err)
	}
	if d.Algorithm() != digest.SHA256 {
		return fmt.Errorf("digest %s: only sha256 digests are supported", d)
	}
	return nil
}
